//! A refresh and an import in Terraform's terms: the runbook reads the
//! group (`cluster::read`); this makes its diagnostics.

use crate::cluster::read::{self, Imported, Reach, Recorded, Refreshed};
use crate::cluster::settings::ClusterSettings;
use crate::provider::Context;
use crate::tf::{Diagnostic, Diagnostics};

/// Refreshes a group (`cluster::read::refresh`); a warning when some node
/// configs could not be read back.
pub async fn refresh(
    ctx: &Context,
    recorded: Recorded<'_>,
    settings: &Result<ClusterSettings, String>,
) -> Result<(Refreshed, Option<Diagnostic>), Diagnostic> {
    let client = ctx.hcloud()?;
    let reach = Reach {
        proxy: ctx.talos_proxy().await.map_err(|d| d.summary),
        cancel: &ctx.cancel,
    };
    let refreshed = read::refresh(&client, reach, recorded, settings)
        .await
        .map_err(|e| e.to_diagnostic())?;
    let warning = refreshed.unchecked.as_ref().map(|why| {
        Diagnostic::warning(
            "Node configs not checked",
            format!(
                "hct could not read back the machine config of {why}. The config hashes \
                 recorded in state are kept, so a config changed outside hct on these nodes \
                 does not show in this plan. hct reaches nodes at their private IPs: when \
                 Terraform runs outside the private network, set talos_proxy (or \
                 HCT_TALOS_PROXY)."
            ),
        )
    });
    Ok((refreshed, warning))
}

/// The servers of `group` for `terraform import` (`cluster::read::import`);
/// `not_found` when there are none.
pub async fn import(
    ctx: &Context,
    cluster: &str,
    group: &str,
    servers_named: &str,
    not_found: impl FnOnce() -> Diagnostic,
) -> Result<Imported, Diagnostics> {
    let client = ctx.hcloud()?;
    read::import(&client, cluster, group, servers_named)
        .await
        .map_err(|e| Diagnostics::from(e.to_diagnostic()))?
        .ok_or_else(|| not_found().into())
}
