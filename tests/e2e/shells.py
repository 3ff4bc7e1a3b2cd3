"""Ask real shells what they complete for a `launch` command line (tests of the generated
completion scripts, src/cli/completion.cc): bash by calling the completion function the way
readline does, bash and zsh interactively on a pseudo-terminal by pressing Tab."""
import os
import re
import shlex
import subprocess
import time

from harness import Terminal

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]|\r")


def bash_complete(words, source, cwd):
    """The candidates bash's `_launch` offers for the command line `words` (split as bash splits
    it: `--opt=v` is `--opt`, `=`, `v`), the cursor at the end of the last word. `source` is a
    shell snippet that defines the completion (`source FILE`, or bash-completion's loader)."""
    line = " ".join(words)
    program = "\n".join([
        source,
        "spec=$(complete -p launch) || exit 3",
        "fn=${spec##*-F }; fn=${fn%% *}",
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})",
        f"COMP_CWORD={len(words) - 1}",
        f"COMP_LINE={shlex.quote(line)}; COMP_POINT=${{#COMP_LINE}}",
        '"${fn}" launch "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}" 2>/dev/null',
        'printf "%s\\n" "${COMPREPLY[@]}"',
    ])
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], cwd=cwd,
                          capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise AssertionError(f"bash failed ({proc.returncode}): {proc.stderr}")
    return [w for w in proc.stdout.split("\n") if w]


def _wait_for(term, pattern, since, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = _ANSI.sub("", term.output()[since:])
        if re.search(pattern, text):
            return text
        time.sleep(0.05)
    raise AssertionError(f"no {pattern!r} on the terminal within {timeout}s; it shows:\n"
                         f"{_ANSI.sub('', term.output()[since:])!r}")


def interactive_complete(shell, setup, typed, cwd, expect, timeout=30):
    """Starts `shell` ("bash" or "zsh") on a terminal, runs `setup` (a line that loads the
    completion), types `typed` and presses Tab three times (a first Tab may complete a common
    prefix, bash lists on the next two, zsh lists on the first); returns what the terminal shows after the typing once `expect` (a regex) shows up."""
    argv = (["bash", "--norc", "--noprofile", "-i"] if shell == "bash" else ["zsh", "-f", "-i"])
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "xterm", "HOME": str(cwd),
           "LANG": "C.UTF-8", "COLUMNS": "200", "LINES": "50"}
    term = Terminal(argv, env, cwd)
    try:
        term.press(f"{setup}; PS1='READY''> '\n".encode())
        _wait_for(term, r"READY> ", 0, timeout)
        since = len(term.output())
        term.press(typed.encode())
        for _ in range(3 if shell == "bash" else 1):
            term.press(b"\t")
            time.sleep(0.3)
        return _wait_for(term, expect, since, timeout)
    finally:
        term.close()  # SIGKILL to the shell's session: a half-typed line has nothing to save
