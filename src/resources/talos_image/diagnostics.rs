//! The snapshot runbook's errors and warnings as Terraform diagnostics:
//! [`SnapshotError`]'s summary and detail, Hetzner failures as the Hetzner
//! client explains them (plus the build's timeout, when that ran out).

use crate::snapshot::SnapshotError;
use crate::tf::Diagnostic;

pub fn to_diagnostic(error: &SnapshotError) -> Diagnostic {
    if let Some((doing, source)) = error.hetzner() {
        let mut diagnostic = source.to_diagnostic(doing);
        if let Some(hint) = error.hint() {
            diagnostic.detail += &format!("\n\n{hint}");
        }
        return diagnostic;
    }
    if error.is_warning() {
        Diagnostic::warning(error.summary(), error.to_string())
    } else {
        Diagnostic::error(error.summary(), error.to_string())
    }
}
