#pragma once
// System calls without libc, clone3 onto a stack of our own, and the signal blocking around a
// clone: for code that runs in a child sharing the launcher's address space (CLONE_VM: the spawn
// in process-posix.cc, the watchdog). Such a child runs at the same time as the launcher and
// shares its thread-local errno, so it must not touch errno, take a lock or allocate. Internal
// to src/.

#include <errno.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "pdlaunch/base/switches.h"

// AddressSanitizer, as GCC says it (__SANITIZE_ADDRESS__) and as Clang 14 does (__has_feature).
#if defined(__SANITIZE_ADDRESS__)
#define PDLAUNCH_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PDLAUNCH_ADDRESS_SANITIZER 1
#endif
#endif

// The clone-VM children exist on x86-64 (Clone3OnStack's trampoline); under AddressSanitizer,
// whose interceptors expect their own stacks, the launcher forks instead.
#if defined(__x86_64__) && !defined(PDLAUNCH_ADDRESS_SANITIZER)
#define PDLAUNCH_HAVE_CLONE_VM 1
#endif

namespace pdlaunch::raw {

/// The system call `number`; returns its result or -errno. errno is never written.
#if defined(__x86_64__)
[[gnu::always_inline]] inline long Syscall(long number, long a1 = 0, long a2 = 0, long a3 = 0,
                                           long a4 = 0, long a5 = 0) {
  long ret;
  register long r10 asm("r10") = a4;
  register long r8 asm("r8") = a5;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(number), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8)
               : "rcx", "r11", "memory");
  return ret;
}
#else
// Only forked children exist here, which have an errno of their own.
inline long Syscall(long number, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0, long a5 = 0) {
  const long ret = ::syscall(number, a1, a2, a3, a4, a5);
  return ret == -1 ? -errno : ret;
}
#endif

template <typename T>
long Arg(T* pointer) {
  return reinterpret_cast<long>(pointer);
}

/// False when the environment says PDLAUNCH_SPAWN=fork: children and the watchdog are forked
/// even where they could be cloned (for measuring one against the other, docs/performance.md,
/// and for testing the fork path on a build that has both).
inline bool CloneVmWanted() {
  static const bool wanted = ReadSwitch(Switch::kSpawn) != "fork";
  return wanted;
}

[[noreturn]] inline void Exit(int code) {
  Syscall(SYS_exit_group, code);
  __builtin_unreachable();
}

/// The kernel's struct sigaction, as rt_sigaction takes it (SIG_DFL is a handler of 0).
struct KernelSigaction {
  unsigned long handler = 0, flags = 0, restorer = 0, mask = 0;
};

/// The disposition of every signal in `which` (bit sig-1) to SIG_DFL, or to SIG_IGN where
/// `ignored(sig)` says so (SIGKILL and SIGSTOP excepted), then an empty signal mask: no handler
/// of the launcher's may run in a child, and one that shares the launcher's memory must not.
/// One rt_sigaction per signal in `which`.
template <typename Ignored>
void ResetSignals(uint64_t which, Ignored ignored) {
  KernelSigaction action;
  for (long sig = 1; sig <= 64; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP || (which & (uint64_t{1} << (sig - 1))) == 0) continue;
    action.handler = ignored(static_cast<int>(sig)) ? reinterpret_cast<unsigned long>(SIG_IGN) : 0;
    Syscall(SYS_rt_sigaction, sig, Arg(&action), 0, 8);
  }
  unsigned long no_signals = 0;
  Syscall(SYS_rt_sigprocmask, SIG_SETMASK, Arg(&no_signals), 0, 8);
}

#ifdef PDLAUNCH_HAVE_CLONE_VM
/// clone3 with the child running `child(arg)` on the stack `args` names (args->stack,
/// args->stack_size), in the launcher's own address space when `args` asks for CLONE_VM (what
/// glibc's posix_spawn does, plus CLONE_INTO_CGROUP and CLONE_PIDFD, which glibc's clone()
/// cannot express). `child` must never return. Returns the child's pid, or -errno.
inline long Clone3OnStack(clone_args* args, void (*child)(void*), void* arg) {
  long ret;
  // r12 and r13 reach the child unchanged; the kernel has set its rsp to stack + stack_size.
  register void (*fn)(void*) asm("r12") = child;
  register void* fn_arg asm("r13") = arg;
  asm volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      "xor %%ebp, %%ebp\n\t"  // The child: no caller frame to unwind into.
      "mov %%r13, %%rdi\n\t"
      "call *%%r12\n\t"
      "ud2\n\t"  // The child function never returns.
      "1:\n\t"
      : "=a"(ret)
      : "a"(static_cast<long>(SYS_clone3)), "D"(args), "S"(sizeof(clone_args)), "r"(fn), "r"(fn_arg)
      : "rcx", "r11", "memory");
  return ret;
}
#endif

}  // namespace pdlaunch::raw

namespace pdlaunch {

/// Blocks every signal for its lifetime. Held around a clone or fork: the child starts with all
/// signals blocked, so no handler of the launcher's runs in it before it has reset them.
class ScopedBlockAllSignals {
 public:
  ScopedBlockAllSignals() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved_);
  }
  ~ScopedBlockAllSignals() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  ScopedBlockAllSignals(const ScopedBlockAllSignals&) = delete;
  ScopedBlockAllSignals& operator=(const ScopedBlockAllSignals&) = delete;

 private:
  sigset_t saved_;
};

}  // namespace pdlaunch
