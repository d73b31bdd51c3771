//! `dealgym report`: write the report, then what it holds.

use anyhow::Result;

use super::skipped_note;
use crate::flags::report::ReportFlags;

pub fn report_command(flags: &ReportFlags) -> Result<()> {
    let summary = dealgym::report::report(&flags.options())?;
    eprintln!(
        "{} episodes reported in {} ({} transcripts, {} files)",
        summary.episodes,
        flags.out.display(),
        summary.transcripts,
        summary.written.len()
    );
    skipped_note(&summary.duplicates, &summary.passed_over);
    Ok(())
}
