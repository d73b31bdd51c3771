//! What the measuring examples share: reading this process's memory from `/proc/self/status`,
//! and the scenario files the importer wrote.
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

/// Every family's scenario file in this checkout, in `Family::ALL` order.
pub fn scenario_files() -> Vec<std::path::PathBuf> {
    dealgym::scenario::Family::ALL
        .iter()
        .map(|f| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scenarios")
                .join(format!("{}.jsonl", f.name()))
        })
        .collect()
}
