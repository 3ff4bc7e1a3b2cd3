#include "pdlaunch/cli/completion.h"

#include <fmt/format.h>

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/version.h"
#include "pdlaunch/cli/cli.h"

namespace pdlaunch {

namespace {

// What the value of an option is, beyond its closed set of choices (FlagInfo::choices).
enum class ValueKind { kText, kDirectory, kFile };

ValueKind KindOf(const FlagInfo& flag) {
  if (flag.dest == "log_dir") return ValueKind::kDirectory;
  if (flag.dest == "report") return ValueKind::kFile;
  return ValueKind::kText;
}

std::vector<FlagInfo> OfferedFlags() {
  std::vector<FlagInfo> offered;
  for (FlagInfo& flag : ListFlags()) {
    if (flag.supported) offered.push_back(std::move(flag));
  }
  return offered;
}

std::string Join(const std::vector<std::string_view>& words) {
  std::string joined;
  for (std::string_view word : words) {
    joined += joined.empty() ? "" : " ";
    joined += word;
  }
  return joined;
}

constexpr std::string_view kBashTemplate = R"(# bash completion for launch (pdlaunch {version}).
# Generated from the launcher's flag table at build time (src/cli/completion.cc); do not edit.

# Options whose value is the next word (or follows '=').
_launch_valued=' {valued} '

_launch() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
  local opt='' value='' i word
  # With '=' in COMP_WORDBREAKS, "--opt=VALUE" arrives as three words: --opt, =, VALUE.
  if [[ ${{cur}} == '=' ]]; then
    opt=${{prev}}
  elif [[ ${{prev}} == '=' ]] && ((COMP_CWORD >= 2)); then
    opt=${{COMP_WORDS[COMP_CWORD-2]}}
    value=${{cur}}
  fi
  # From the training script on, every word is the script's (argparse's REMAINDER): file names.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${{COMP_WORDS[i]}}
    case ${{word}} in
      --) return 0 ;;
      -*)
        if [[ ${{COMP_WORDS[i+1]-}} == '=' ]]; then
          ((i += 2))
        elif [[ ${{_launch_valued}} == *" ${{word}} "* ]]; then
          ((i += 1))
        fi
        ;;
      *) return 0 ;;
    esac
  done
  if [[ -z ${{opt}} && ${{_launch_valued}} == *" ${{prev}} "* ]]; then
    opt=${{prev}}
    value=${{cur}}
  fi
  if [[ -n ${{opt}} ]]; then
    compopt +o default 2>/dev/null
    case ${{opt}} in
{value_cases}    esac
    return 0
  fi
  if [[ ${{cur}} == -* ]]; then
    COMPREPLY=($(compgen -W '{flags}' -- "${{cur}}"))
  fi
  return 0  # Nothing offered: readline completes a file name (the training script).
}}
complete -o default -F _launch launch
)";

std::string BashScript() {
  std::vector<std::string_view> flags = {"-h"};
  std::vector<std::string_view> valued;
  std::string cases;
  for (const FlagInfo& flag : OfferedFlags()) {
    flags.push_back(flag.name);
    if (flag.value == FlagInfo::Value::kRequired) valued.push_back(flag.name);
    if (flag.value == FlagInfo::Value::kNone) continue;
    std::string action;
    if (!flag.choices.empty()) {
      action = fmt::format("COMPREPLY=($(compgen -W '{}' -- \"${{value}}\"))", Join(flag.choices));
    } else if (KindOf(flag) == ValueKind::kDirectory) {
      action = "compopt -o filenames; COMPREPLY=($(compgen -d -- \"${value}\"))";
    } else if (KindOf(flag) == ValueKind::kFile) {
      action = "compopt -o filenames; COMPREPLY=($(compgen -f -- \"${value}\"))";
    } else {
      continue;  // Free text: nothing to offer.
    }
    cases += fmt::format("      {}) {} ;;\n", flag.name, action);
  }
  return fmt::format(kBashTemplate, fmt::arg("version", kVersion), fmt::arg("valued", Join(valued)),
                     fmt::arg("value_cases", cases), fmt::arg("flags", Join(flags)));
}

// The first sentence of a help text ("e.g. 0,1" does not end one), made safe inside '[...]' of a
// single-quoted _arguments spec.
std::string ZshDescription(std::string_view help) {
  size_t end = help.find(". ");
  while (end != std::string_view::npos && end + 2 < help.size() &&
         !std::isupper(static_cast<unsigned char>(help[end + 2]))) {
    end = help.find(". ", end + 1);
  }
  std::string_view sentence = help.substr(0, end);
  if (sentence.ends_with('.')) sentence.remove_suffix(1);
  std::string out;
  for (char c : sentence) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      if (c == '[' || c == ']' || c == ':' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out;
}

std::string ZshAction(const FlagInfo& flag) {
  if (!flag.choices.empty()) return fmt::format("({})", Join(flag.choices));
  switch (KindOf(flag)) {
    case ValueKind::kDirectory:
      return "_directories";
    case ValueKind::kFile:
      return "_files";
    case ValueKind::kText:
      break;
  }
  return " ";  // Free text: a message, no candidates.
}

std::string ZshSpec(const FlagInfo& flag) {
  const std::string description = ZshDescription(flag.help);
  if (flag.name == "--help") {
    return fmt::format("'(- : *)'{{-h,--help}}'[{}]'", description);
  }
  if (flag.name == "--version") return fmt::format("'(- : *)--version[{}]'", description);
  switch (flag.value) {
    case FlagInfo::Value::kNone:
      return fmt::format("'{}[{}]'", flag.name, description);
    case FlagInfo::Value::kRequired:
      return fmt::format("'{}=[{}]:{}:{}'", flag.name, description, flag.dest, ZshAction(flag));
    case FlagInfo::Value::kOptionalBool:
      return fmt::format("'{}=-[{}]::{}:{}'", flag.name, description, flag.dest, ZshAction(flag));
  }
  return "";
}

std::string ZshScript() {
  std::string specs;
  for (const FlagInfo& flag : OfferedFlags()) {
    specs += fmt::format("  {} \\\n", ZshSpec(flag));
  }
  return fmt::format(
      "#compdef launch\n"
      "# zsh completion for launch (pdlaunch {}).\n"
      "# Generated from the launcher's flag table at build time (src/cli/completion.cc); do not "
      "edit.\n"
      "# From the training script on, every word is the script's: file names.\n"
      "\n"
      "_arguments -S : \\\n"
      "{}"
      "  ':training script:_files' \\\n"
      "  '*::script argument:_files'\n",
      kVersion, specs);
}

}  // namespace

Shell ParseShell(std::string_view name) {
  if (name == "bash") return Shell::kBash;
  if (name == "zsh") return Shell::kZsh;
  throw UsageError(fmt::format("unknown shell: '{}' (choose from bash, zsh)", name));
}

std::string CompletionScript(Shell shell) {
  return shell == Shell::kBash ? BashScript() : ZshScript();
}

}  // namespace pdlaunch
