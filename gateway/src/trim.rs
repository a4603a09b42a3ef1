//! Gives back the pages of covo's own code and constants that the process stopped using.
//!
//! A static binary's code and read-only data are file-backed memory: every page the process
//! touches stays mapped, and counted in its RSS, until it exits, although most of what
//! `covo run` executes at start-up (configuration, migrations, the tool registry, each channel's
//! handshake) never runs again. Much as a kernel frees its init sections after boot, `covo run`
//! drops those mappings once started and then every [`EVERY`] ([`every_minute`]), and `covo mcp`
//! once its client's handshake is done: `madvise(MADV_DONTNEED)` over the binary's read-only
//! segments, from its ELF header (`__ehdr_start`) to the end of its code (`etext`), which both
//! lld and GNU ld lay out before anything writable. Nothing is lost:
//! those pages were never written, so a page used again is mapped back from the page cache on
//! its next touch (a minor fault). What stays mapped is the working set since the last release,
//! which the link order (`gateway/link/*.order`, idle functions first) keeps small.

use std::time::Duration;

/// The first release, once `covo run`'s start-up is over.
pub const FIRST: Duration = Duration::from_secs(5);

/// How often `covo run` releases again: code a burst of work ran (a chat turn, a tool) stops
/// counting against the daemon within this long.
pub const EVERY: Duration = Duration::from_secs(60);

const PAGE: usize = 4096;

extern "C" {
    static __ehdr_start: u8;
    static etext: u8;
}

/// Releases the code's pages [`FIRST`] from now and every [`EVERY`] after, for as long as it
/// is polled (a branch of a long-lived process's main loop); it never ends.
pub async fn every_minute() {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + FIRST, EVERY);
    loop {
        ticks.tick().await;
        // It cannot fail but on a kernel without `madvise`, where there is nothing to do.
        let _ = release_code();
    }
}

/// Whether `/proc/self/status` (its text) names a tracer: a debugger's breakpoints are written
/// into private copies of the code's pages, which a release would throw away.
fn traced(status: &str) -> bool {
    status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))
        .is_some_and(|pid| pid.trim() != "0")
}

/// Unmaps the pages of the binary's read-only segments (ELF header, constants, code); the bytes
/// it covered (0 while a debugger is attached, when nothing is released), or the error
/// `madvise` gave.
#[allow(unsafe_code)]
pub fn release_code() -> Result<usize, rustix::io::Errno> {
    if std::fs::read_to_string("/proc/self/status").is_ok_and(|s| traced(&s)) {
        return Ok(0);
    }
    // Only the addresses of two linker-defined symbols are taken; nothing is read.
    let (start, end) = (
        std::ptr::addr_of!(__ehdr_start) as usize,
        std::ptr::addr_of!(etext) as usize,
    );
    // 4 KiB, the smallest page size: the kernel rounds the length up to its own, and the start
    // is a segment's, which linkers align to the largest page size a target may have.
    let start = start & !(PAGE - 1);
    let end = end.div_ceil(PAGE) * PAGE;
    if end <= start {
        return Ok(0);
    }
    // SAFETY: [start, end) holds the ELF header, read-only data and code, all mapped
    // read-only from the executable and never written (the writable segments start on a later
    // page), so dropping the mappings changes no byte the process sees: the next access maps
    // the file's page again. A gap between the segments (a linker's alignment) is not mapped,
    // which `madvise` reports as ENOMEM after advising the rest.
    match unsafe {
        rustix::mm::madvise(
            start as *mut std::ffi::c_void,
            end - start,
            rustix::mm::Advice::LinuxDontNeed,
        )
    } {
        Ok(()) | Err(rustix::io::Errno::NOMEM) => Ok(end - start),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rss_file_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("RssFile:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    /// Every built-in tool's parameter schema as JSON: a good deal of code and constants.
    fn schemas() -> String {
        crate::tools::all()
            .map(|t| format!("{}={}", t.spec.name, t.spec.params_json()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn nothing_is_released_under_a_debugger() {
        assert!(traced("Name:\tcovo\nTracerPid:\t4242\nUid:\t0\n"));
        assert!(!traced("Name:\tcovo\nTracerPid:\t0\nUid:\t0\n"));
        assert!(!traced("Name:\tcovo\n"));
    }

    #[test]
    fn releasing_the_code_unmaps_it_and_the_process_runs_on() {
        let before_work = schemas();
        assert!(before_work.contains("i2c_scan="));
        let before = rss_file_kib();
        let released = release_code().unwrap();
        let after = rss_file_kib();
        assert!(released > 1 << 20, "released only {released} bytes");
        // Other test threads fault some pages back at once; most of the binary stays unmapped.
        assert!(
            after + 1024 < before,
            "RssFile {before} KiB before, {after} KiB after"
        );
        // The code runs on, and gives the same answers.
        assert_eq!(schemas(), before_work);
        let json = serde_json::json!({"read_only": true, "n": [1, 2, 3]}).to_string();
        assert_eq!(json, r#"{"read_only":true,"n":[1,2,3]}"#);
        assert!(release_code().is_ok());
    }
}
