//! What the measuring examples share: reading this process's memory from `/proc/self/status`.
#![allow(dead_code)]

/// A field of /proc/self/status in KiB (`VmRSS`, `VmHWM`); 0 where the file or field is
/// missing (not Linux).
pub fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)?
                .strip_prefix(':')?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// Reset the peak (`VmHWM`) to the current RSS, so a later reading is the peak of what ran
/// since (Linux: `clear_refs` 5). Whether the kernel allowed it.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}
