//! What a confined child execs: the program, its argv and its environment, made into
//! NUL-terminated strings and pointer arrays by the host before the spawn, so the child only
//! makes the system call (nothing allocates between clone and exec). Used by the launcher
//! ([`super::launch`]) and the namespace's init ([`super::pidns`]).

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use super::sys;

/// What to exec, prepared by the host: NUL-terminated strings and the pointer arrays into them.
pub struct Exec {
    _strings: Vec<CString>,
    program: *const libc::c_char,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

impl Exec {
    /// `program` with `argv[0]` = `arg0` (or the program), `args`, and exactly `env`.
    pub fn new(program: &Path, arg0: Option<&OsStr>, args: &[OsString], env: &[(OsString, OsString)]) -> io::Result<Self> {
        let mut strings = Vec::with_capacity(args.len() + env.len() + 2);
        strings.push(cstring(program.as_os_str().as_bytes())?);
        strings.push(cstring(arg0.unwrap_or(program.as_os_str()).as_bytes())?);
        for a in args {
            strings.push(cstring(a.as_bytes())?);
        }
        let argc = strings.len() - 1;
        for (k, v) in env {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            strings.push(cstring(&kv)?);
        }
        let program = strings[0].as_ptr();
        let mut argv: Vec<*const libc::c_char> = strings[1..=argc].iter().map(|s| s.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<*const libc::c_char> = strings[argc + 1..].iter().map(|s| s.as_ptr()).collect();
        envp.push(std::ptr::null());
        Ok(Exec { _strings: strings, program, argv, envp })
    }

    /// Execs; returns only on failure, with the errno.
    ///
    /// # Safety
    /// A raw system call; replaces the calling process.
    pub unsafe fn exec(&self) -> i32 {
        sys::execve(self.program, self.argv.as_ptr(), self.envp.as_ptr())
    }
}

pub(super) fn cstring(b: &[u8]) -> io::Result<CString> {
    CString::new(b).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "nul byte found in provided data"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_arrays_are_null_terminated() {
        let e = Exec::new(Path::new("/bin/x"), None, &["a".into(), "".into()], &[("K".into(), "v=w".into())]).unwrap();
        assert_eq!(e.argv.len(), 4);
        assert!(e.argv[3].is_null() && e.envp[1].is_null());
        // SAFETY: pointers into e's strings.
        unsafe {
            assert_eq!(std::ffi::CStr::from_ptr(e.argv[0]).to_bytes(), b"/bin/x");
            assert_eq!(std::ffi::CStr::from_ptr(e.argv[2]).to_bytes(), b"");
            assert_eq!(std::ffi::CStr::from_ptr(e.envp[0]).to_bytes(), b"K=v=w");
        }
        assert!(Exec::new(Path::new("/bin/x"), None, &["a\0b".into()], &[]).is_err());
    }
}
