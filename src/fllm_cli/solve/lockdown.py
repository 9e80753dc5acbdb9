"""Kernel-enforced isolation for the sandbox: Landlock for files, seccomp-bpf for system calls.

This module uses the standard library only, because the sandbox child loads it by file path
(the child imports nothing from fllm). fllm itself imports it to probe what the machine offers.

Two layers, both available to unprivileged processes on stock Linux:

* **Landlock** (``landlock_create_ruleset``/``add_rule``/``restrict_self``): the process may only
  read the folders given as read-only roots and read/write its work folder; everything else in
  the file system (``/proc`` included) is refused by the kernel. From ABI 4 TCP bind/connect is
  refused as well; from ABI 6 the process can neither signal nor reach abstract unix sockets of
  processes outside its own Landlock domain.
* **seccomp-bpf** through ``libseccomp.so.2``: a filter that refuses starting processes, sockets,
  debugging other processes, signals to other processes, new executable memory, namespaces,
  mounts, SysV/POSIX IPC, io_uring and other calls the generated code never needs.

Both are one-way: once applied they hold for the process and everything it could start.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import sysconfig
from dataclasses import dataclass, field

# Landlock system call numbers (identical on x86_64 and aarch64).
_LL_CREATE, _LL_ADD_RULE, _LL_RESTRICT = 444, 445, 446
_LL_CREATE_VERSION = 1
_LL_RULE_PATH_BENEATH = 1

# Landlock file-system access rights; the ABI that introduced each is in the comment.
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2  # ABI 4
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1, 2  # ABI 6

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_PDEATHSIG = 1
# Who gets the signal of async I/O: with one of these a program has the kernel signal any
# process (SIGIO, or SIGKILL with F_SETSIG), which Landlock scopes only from ABI 6.
_F_SETOWN, _F_SETSIG, _F_SETOWN_EX = 8, 10, 15
_FIOSETOWN, _SIOCSPGRP, _TIOCSPGRP = 0x8901, 0x8902, 0x5410
_PROT_EXEC = 0x4
_O_TRUNC = 0o1000
_CLONE_THREAD = 0x00010000

# libseccomp constants (seccomp.h).
_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_CMP_NE, _SCMP_CMP_EQ, _SCMP_CMP_MASKED_EQ = 1, 4, 7

#: The oldest Landlock ABI accepted without the explicit opt-in.
MIN_LANDLOCK_ABI = 1


class LockdownError(RuntimeError):
    """A layer could not be applied."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _syscall(nr: int, *args: object) -> int:
    """Call a raw system call; raise OSError on failure."""
    ret = _libc().syscall(ctypes.c_long(nr), *args)
    if ret < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return int(ret)


def _libseccomp() -> ctypes.CDLL:
    lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


@dataclass
class Isolation:
    """What the kernel offers (from :func:`probe`) or what was applied (from :func:`lock`)."""

    seccomp: bool = False
    landlock_abi: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """True when both layers are there."""
        return self.seccomp and self.landlock_abi >= MIN_LANDLOCK_ABI

    def summary(self) -> str:
        """Return a short description such as ``seccomp + landlock abi 7``."""
        parts = []
        if self.seccomp:
            parts.append("seccomp")
        if self.landlock_abi:
            extra = []
            if self.landlock_abi >= 4:
                extra.append("tcp")
            if self.landlock_abi >= 6:
                extra.append("signal/abstract-socket scoping")
            more = f" ({', '.join(['files', *extra])})"
            parts.append(f"landlock abi {self.landlock_abi}{more}")
        return " + ".join(parts) if parts else "none"

    def missing(self) -> str:
        """Name the missing layers and why, in one line."""
        names = []
        if not self.seccomp:
            names.append("seccomp")
        if self.landlock_abi < MIN_LANDLOCK_ABI:
            names.append("Landlock")
        why = "; ".join(self.problems)
        return ", ".join(names) + (f" ({why})" if why else "")


def landlock_abi() -> int:
    """Return the kernel's Landlock ABI version, 0 when Landlock is off or absent."""
    try:
        return _syscall(_LL_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(_LL_CREATE_VERSION))
    except (OSError, AttributeError):
        return 0


def probe() -> Isolation:
    """Report which layers this machine can apply, without applying anything."""
    report = Isolation()
    if not sys.platform.startswith("linux"):
        report.problems.append("not Linux")
        return report
    report.landlock_abi = landlock_abi()
    if not report.landlock_abi:
        report.problems.append("Landlock is not enabled in this kernel")
    try:
        lib = _libseccomp()
        report.seccomp = lib.seccomp_api_get() >= 1
        if not report.seccomp:
            report.problems.append("the kernel refuses seccomp filters")
    except OSError:
        report.problems.append("libseccomp.so.2 is not installed")
    return report


def read_roots() -> list[str]:
    """Folders the generated code may read: Python's library and installed packages."""
    names = ("stdlib", "platstdlib", "purelib", "platlib")
    roots = {sysconfig.get_path(n) for n in names}
    roots.update(os.path.join(p, "lib-dynload") for p in list(roots) if p)
    z3 = sys.modules.get("z3")
    if z3 is not None and getattr(z3, "__file__", None):
        roots.add(os.path.dirname(os.path.dirname(str(z3.__file__))))
    real = {os.path.realpath(r) for r in roots if r and os.path.isdir(r)}
    return sorted(real)


def _fs_rights(abi: int) -> int:
    """All file-system rights this ABI knows (every one of them is then refused by default)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def _write_rights(abi: int) -> int:
    """Rights inside the work folder: ordinary files and folders, no devices, fifos, sockets."""
    rights = (
        FS_READ_FILE
        | FS_READ_DIR
        | FS_WRITE_FILE
        | FS_REMOVE_DIR
        | FS_REMOVE_FILE
        | FS_MAKE_DIR
        | FS_MAKE_REG
        | FS_MAKE_SYM
    )
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    return rights


def _add_path(ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_DIRECTORY)
    try:
        attr = _PathBeneathAttr(rights, fd)
        _syscall(
            _LL_ADD_RULE,
            ctypes.c_int(ruleset),
            ctypes.c_int(_LL_RULE_PATH_BENEATH),
            ctypes.byref(attr),
            ctypes.c_uint32(0),
        )
    finally:
        os.close(fd)


def apply_landlock(abi: int, readable: list[str], writable: list[str]) -> None:
    """Restrict this thread (and its future children) to the given folders."""
    attr = _RulesetAttr(_fs_rights(abi), 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL
        size = 24
    ruleset = _syscall(_LL_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        for path in readable:
            _add_path(ruleset, path, FS_READ_FILE | FS_READ_DIR)
        for path in writable:
            _add_path(ruleset, path, _write_rights(abi))
        _no_new_privs()
        _syscall(_LL_RESTRICT, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)


def _no_new_privs() -> None:
    if _libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise LockdownError("prctl(PR_SET_NO_NEW_PRIVS) failed")


def set_parent_death_signal(sig: int) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent exits."""
    if _libc().prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        raise LockdownError("prctl(PR_SET_PDEATHSIG) failed")


# System calls refused outright (EPERM). Names unknown on this architecture are skipped.
DENIED = (
    # starting programs and processes
    "execve", "execveat", "fork", "vfork", "uselib",
    # sockets of every family (and the calls that use an existing one)
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "sendto", "sendmsg", "sendmmsg", "recvfrom", "recvmsg", "recvmmsg", "socketcall",
    # other processes: debugging, memory, handles, comparison, scheduling
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp",
    "pidfd_open", "pidfd_getfd", "pidfd_send_signal", "tkill", "move_pages", "migrate_pages",
    "setpriority", "ioprio_set", "sched_setscheduler", "sched_setparam", "sched_setattr",
    # leaving the process group or session (the parent kills the group on timeout)
    "setsid", "setpgid",
    # namespaces, mounts, root changes
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsmount",
    "fspick", "open_tree", "move_mount", "mount_setattr",
    # paths Landlock does not govern (metadata, handles, special files)
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    "open_by_handle_at", "name_to_handle_at", "mknod", "mknodat", "truncate", "utimes",
    "utime", "futimesat", "utimensat", "inotify_add_watch", "acct", "quotactl", "quotactl_fd",
    "swapon", "swapoff",
    # kernel interfaces that bypass or outlive the filter
    "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open",
    "userfaultfd", "fanotify_init", "keyctl", "add_key", "request_key", "personality",
    "modify_ldt", "iopl", "ioperm", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "reboot", "syslog", "setrlimit", "capset",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups",
    "setfsuid", "setfsgid", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "sethostname", "setdomainname", "lookup_dcookie",
    # SysV and POSIX IPC reach other processes by key or name, not by path
    "shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl", "semget",
    "semop", "semctl", "semtimedop", "mq_open", "mq_unlink", "mq_timedsend",
    "mq_timedreceive", "mq_notify", "mq_getsetattr",
)  # fmt: skip


class _Filter:
    """A libseccomp filter under construction (default: allow)."""

    def __init__(self) -> None:
        self.lib = _libseccomp()
        self.ctx = self.lib.seccomp_init(_SCMP_ACT_ALLOW)
        if not self.ctx:
            raise LockdownError("seccomp_init failed")

    def rule(self, name: str, err: int, *cmps: tuple[int, int, int, int]) -> None:
        """Fail ``name`` with ``err`` when every comparison (arg, op, a, b) holds."""
        nr = self.lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            return  # not a system call on this architecture
        array = (_ArgCmp * max(1, len(cmps)))(*[_ArgCmp(*c) for c in cmps])
        action = 0x00050000 | (err & 0xFFFF)  # SCMP_ACT_ERRNO(err)
        rc = self.lib.seccomp_rule_add_array(self.ctx, action, nr, len(cmps), array)
        if rc != 0:
            raise LockdownError(f"seccomp rule for {name} failed ({rc})")

    def load(self) -> None:
        try:
            rc = self.lib.seccomp_load(self.ctx)
            if rc != 0:
                raise LockdownError(f"seccomp_load failed ({rc})")
        finally:
            self.lib.seccomp_release(self.ctx)


def apply_seccomp(truncate_by_landlock: bool) -> None:
    """Load the filter; from here on this process can only compute, read and write."""
    f = _Filter()
    for name in DENIED:
        f.rule(name, errno.EPERM)
    # glibc tries clone3 first and falls back to clone on ENOSYS; clone is checked below.
    f.rule("clone3", errno.ENOSYS)
    f.rule("openat2", errno.ENOSYS)
    f.rule("clone", errno.EPERM, (0, _SCMP_CMP_MASKED_EQ, _CLONE_THREAD, 0))
    me = os.getpid()
    for name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        f.rule(name, errno.EPERM, (0, _SCMP_CMP_NE, me, 0))
    f.rule("prlimit64", errno.EPERM, (2, _SCMP_CMP_NE, 0, 0))
    f.rule("sched_setaffinity", errno.EPERM, (0, _SCMP_CMP_NE, 0, 0))
    f.rule("prctl", errno.EPERM, (0, _SCMP_CMP_EQ, _PR_SET_PDEATHSIG, 0))
    for name in ("fcntl", "fcntl64"):  # on every kernel, not only where Landlock scopes signals
        for command in (_F_SETOWN, _F_SETSIG, _F_SETOWN_EX):
            f.rule(name, errno.EPERM, (1, _SCMP_CMP_EQ, command, 0))
    for request in (_FIOSETOWN, _SIOCSPGRP, _TIOCSPGRP):
        f.rule("ioctl", errno.EPERM, (1, _SCMP_CMP_EQ, request, 0))
    # No new executable memory: no native code can be loaded after the lockdown.
    f.rule("mmap", errno.EPERM, (2, _SCMP_CMP_MASKED_EQ, _PROT_EXEC, _PROT_EXEC))
    f.rule("mprotect", errno.EPERM, (2, _SCMP_CMP_MASKED_EQ, _PROT_EXEC, _PROT_EXEC))
    f.rule("pkey_mprotect", errno.EPERM, (2, _SCMP_CMP_MASKED_EQ, _PROT_EXEC, _PROT_EXEC))
    if not truncate_by_landlock:
        # Landlock before ABI 3 cannot refuse O_TRUNC on read-only files: refuse it everywhere.
        f.rule("creat", errno.EPERM)
        f.rule("open", errno.EPERM, (1, _SCMP_CMP_MASKED_EQ, _O_TRUNC, _O_TRUNC))
        f.rule("openat", errno.EPERM, (2, _SCMP_CMP_MASKED_EQ, _O_TRUNC, _O_TRUNC))
    f.load()


def single_threaded() -> bool:
    """True when this process has one thread (Landlock applies to the calling thread only)."""
    try:
        return len(os.listdir(f"/proc/{os.getpid()}/task")) == 1
    except OSError:
        return False


def lock(readable: list[str], writable: list[str], *, required: bool) -> Isolation:
    """Apply every layer the kernel offers; raise LockdownError if ``required`` and one fails."""
    offered = probe()
    applied = Isolation(problems=list(offered.problems))
    if required and not offered.complete:
        raise LockdownError("missing: " + offered.missing())
    if not single_threaded():
        raise LockdownError("the sandbox process is not single-threaded before the lockdown")
    if offered.landlock_abi:
        try:
            apply_landlock(offered.landlock_abi, readable, writable)
            applied.landlock_abi = offered.landlock_abi
        except (OSError, LockdownError) as exc:
            applied.problems.append(f"Landlock failed: {exc}")
    if offered.seccomp:
        try:
            _no_new_privs()
            apply_seccomp(truncate_by_landlock=applied.landlock_abi >= 3)
            applied.seccomp = True
        except (OSError, LockdownError) as exc:
            applied.problems.append(f"seccomp failed: {exc}")
    if required and not applied.complete:
        raise LockdownError("missing: " + applied.missing())
    return applied
