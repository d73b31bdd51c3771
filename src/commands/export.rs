//! `dealgym export`: write the trainer lines, then how many.

use anyhow::Result;

use super::skipped_note;
use crate::flags::export::ExportFlags;
use dealgym::export::{export_to, ExportError};

pub fn export_command(flags: &ExportFlags) -> Result<()> {
    let options = flags.options()?;
    let summary = match export_to(&options, flags.out.as_deref()) {
        Ok(summary) => summary,
        // The reader of stdout went away (`| head`): stop quietly, as Unix tools do.
        Err(ExportError::Write { source, .. })
            if flags.out.is_none() && source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            return Ok(())
        }
        Err(e) => return Err(e.into()),
    };
    let to = match &flags.out {
        Some(path) => path.display().to_string(),
        None => "stdout".to_string(),
    };
    eprintln!(
        "{} lines ({} seat-episodes of {} episodes in {} groups) written to {to} as {}",
        summary.lines,
        summary.written,
        summary.episodes,
        summary.groups,
        options.format.name()
    );
    if let Some(line) = summary.skipped_line(options.format) {
        eprintln!("{line}");
    }
    skipped_note(&summary.duplicates, &summary.passed_over);
    Ok(())
}
