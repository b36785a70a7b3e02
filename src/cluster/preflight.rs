//! Checks against Hetzner before anything is created, so a wrong network,
//! image or server type fails the plan with the fix instead of leaving
//! half a cluster behind.

use super::endpoint;
use super::group::GroupSpec;
use super::settings::ClusterSettings;
use crate::hcloud::Client;
use crate::hcloud::models::Network;
use crate::network_plan::{MAX_SERVERS_PER_NETWORK, NetworkPlan};
use crate::talos::Role;
use crate::talos::release::TalosVersion;
use crate::tf::{AttrPath, Diagnostic, Diagnostics};

/// What a group is checked against before servers are added or resized.
pub struct Target<'a> {
    pub network_id: i64,
    pub plan: &'a NetworkPlan,
    /// None while not known yet (an image built in the same apply).
    pub image_id: Option<&'a str>,
    pub talos_version: &'a TalosVersion,
}

impl<'a> From<&'a ClusterSettings> for Target<'a> {
    fn from(settings: &'a ClusterSettings) -> Self {
        Target {
            network_id: settings.network_id,
            plan: &settings.plan,
            image_id: Some(&settings.image_id),
            talos_version: &settings.talos_version,
        }
    }
}

/// Preflight of `new_servers` more servers (or a new server type) of `spec`.
pub async fn group(
    client: &Client,
    target: &Target<'_>,
    spec: &GroupSpec,
    new_servers: usize,
    paths: &Paths,
) -> Diagnostics {
    Preflight {
        network_id: target.network_id,
        plan: target.plan,
        image_id: target.image_id,
        talos_version: target.talos_version,
        server_type: &spec.server_type,
        location: &spec.location,
        new_servers,
        load_balancer_type: (spec.role == Role::ControlPlane
            && target.plan.load_balancer_ip().is_some())
        .then_some(endpoint::LOAD_BALANCER_TYPE),
        paths: paths.clone(),
    }
    .run(client)
    .await
}

/// What to check, and where in the configuration each input came from.
pub struct Preflight<'a> {
    pub network_id: i64,
    pub plan: &'a NetworkPlan,
    /// None while not known yet (an image built in the same apply); its
    /// checks then wait for apply.
    pub image_id: Option<&'a str>,
    pub talos_version: &'a TalosVersion,
    pub server_type: &'a str,
    pub location: &'a str,
    /// Servers this change adds to the network.
    pub new_servers: usize,
    /// The load balancer type the API endpoint needs at `location`
    /// (the control plane of a cluster with `api_endpoint =
    /// "load_balancer"`).
    pub load_balancer_type: Option<&'a str>,
    pub paths: Paths,
}

#[derive(Clone)]
pub struct Paths {
    pub network_id: AttrPath,
    pub network_plan: AttrPath,
    pub image_id: AttrPath,
    pub server_type: AttrPath,
    pub location: AttrPath,
}

/// A `datacenter` given as location (`nbg1-dc3`): the location, and a
/// deprecation warning. Hetzner removed `datacenter` from server creation.
pub fn location(text: &str, path: AttrPath) -> (String, Option<Diagnostic>) {
    match text.split_once("-dc") {
        Some((location, number))
            if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) =>
        {
            (
                location.to_string(),
                Some(
                    Diagnostic::warning(
                        "Datacenter given as location",
                        format!(
                            "{text:?} is a datacenter; Hetzner no longer takes datacenters when \
                         creating servers. hct uses its location {location:?}: write \
                         {location:?} to silence this warning."
                        ),
                    )
                    .at(path),
                ),
            )
        }
        _ => (text.to_string(), None),
    }
}

impl Preflight<'_> {
    /// Every finding; errors mean nothing may be created.
    pub async fn run(&self, client: &Client) -> Diagnostics {
        let ((mut found, image_architecture), server_type, load_balancer) = tokio::join!(
            self.cluster_wide(client),
            client.server_type(self.server_type),
            self.load_balancer_type(client),
        );
        self.check_server_type(server_type, image_architecture, &mut found);
        found.extend(load_balancer);
        found
    }

    /// The endpoint's load balancer type is sold at the control plane's
    /// location.
    async fn load_balancer_type(&self, client: &Client) -> Diagnostics {
        let mut found = Diagnostics::new();
        let Some(name) = self.load_balancer_type else {
            return found;
        };
        match client.load_balancer_type(name).await {
            Ok(Some(kind)) if kind.sold_at(self.location) => {}
            Ok(Some(kind)) => found.push(
                Diagnostic::error(
                    "Load balancer type not offered at this location",
                    format!(
                        "The API endpoint's load balancer ({name}) is not offered in {:?}; it is \
                         offered in: {}. Put the control plane in one of those locations, or \
                         use api_endpoint = \"first_control_plane\" in the network plan.",
                        self.location,
                        kind.prices
                            .iter()
                            .map(|p| p.location.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .at(self.paths.location.clone()),
            ),
            Ok(None) => found.push(
                Diagnostic::error(
                    "Load balancer type not found",
                    format!(
                        "Hetzner offers no load balancer type {name:?}, which the API endpoint \
                         needs. Use api_endpoint = \"first_control_plane\" in the network plan."
                    ),
                )
                .at(self.paths.network_plan.clone()),
            ),
            Err(e) => found.push(e.to_diagnostic("reading the load balancer type")),
        }
        found
    }

    /// The checks of the cluster-wide settings alone (network, image), as
    /// `hct_cluster_secrets` makes them before any group is known; with the
    /// image's architecture, for the server type's check.
    pub async fn cluster_wide(&self, client: &Client) -> (Diagnostics, Option<String>) {
        let mut found = Diagnostics::new();
        let (network, image) = tokio::join!(client.network(self.network_id), self.image(client));
        match network {
            Ok(Some(network)) => self.check_network(&network, &mut found),
            Ok(None) => found.push(
                Diagnostic::error(
                    "Network not found",
                    format!(
                        "Hetzner network {} does not exist, or the API token belongs to another \
                         project. Pass the id of an existing network (e.g. hcloud_network.this.id).",
                        self.network_id
                    ),
                )
                .at(self.paths.network_id.clone()),
            ),
            Err(e) => found.push(e.to_diagnostic("reading the network")),
        }
        let image_architecture = match image {
            Ok(Some(image)) => self.check_image(&image, &mut found),
            Ok(None) if self.image_id.is_none() => None,
            Ok(None) => {
                found.push(
                    Diagnostic::error(
                        "Talos image not found",
                        format!(
                            "Image {} does not exist in this project. Build one with resource \
                             \"hct_talos_image\", or look one up with data \"hct_talos_image\".",
                            self.image_id.unwrap_or_default()
                        ),
                    )
                    .at(self.paths.image_id.clone()),
                );
                None
            }
            Err(e) => {
                found.push(e.to_diagnostic("reading the image"));
                None
            }
        };
        (found, image_architecture)
    }

    fn check_server_type(
        &self,
        server_type: Result<Option<crate::hcloud::models::ServerType>, crate::hcloud::HcloudError>,
        image_architecture: Option<String>,
        found: &mut Diagnostics,
    ) {
        match server_type {
            Ok(Some(server_type)) => {
                match server_type.offer_in(self.location) {
                    None => found.push(
                        Diagnostic::error(
                            "Server type not offered at this location",
                            format!(
                                "{} is not offered in {:?}; it is offered in: {}. Pick another \
                                 location or server type.",
                                self.server_type,
                                self.location,
                                server_type
                                    .locations
                                    .iter()
                                    .map(|l| l.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        )
                        .at(self.paths.location.clone()),
                    ),
                    Some(offer) => {
                        if let Some(deprecation) = offer.deprecation.as_ref().or(server_type.deprecation.as_ref()) {
                            found.push(
                                Diagnostic::warning(
                                    "Deprecated server type",
                                    format!(
                                        "{} is deprecated in {} and can be ordered until {}. \
                                         Plan a move to its successor.",
                                        self.server_type, self.location, deprecation.unavailable_after
                                    ),
                                )
                                .at(self.paths.server_type.clone()),
                            );
                        }
                    }
                }
                if let Some(architecture) = image_architecture
                    && architecture != server_type.architecture
                {
                    found.push(
                        Diagnostic::error(
                            "Image and server type differ in architecture",
                            format!(
                                "Image {} is for {architecture} servers, {} is {}. Use a Talos \
                                 image of architecture {} (amd64 for x86, arm64 for arm), or \
                                 another server type.",
                                self.image_id.unwrap_or_default(),
                                self.server_type,
                                server_type.architecture,
                                if server_type.architecture == "arm" { "arm64" } else { "amd64" },
                            ),
                        )
                        .at(self.paths.server_type.clone()),
                    );
                }
            }
            Ok(None) => found.push(
                Diagnostic::error(
                    "Unknown server type",
                    format!(
                        "Hetzner has no server type {:?}. Use one such as cx23 (x86) or cax11 (arm).",
                        self.server_type
                    ),
                )
                .at(self.paths.server_type.clone()),
            ),
            Err(e) => found.push(e.to_diagnostic("reading the server type")),
        }
    }

    async fn image(
        &self,
        client: &Client,
    ) -> Result<Option<crate::hcloud::models::Image>, crate::hcloud::HcloudError> {
        match self.image_id.map(str::parse::<i64>) {
            Some(Ok(id)) => client.image(id).await,
            Some(Err(_)) => Ok(None),
            None => Ok(None),
        }
    }

    fn check_network(&self, network: &Network, found: &mut Diagnostics) {
        let plan = self.plan;
        if network.ip_range != plan.network_cidr().to_string() {
            found.push(
                Diagnostic::error(
                    "Network does not match the plan",
                    format!(
                        "Network {} has ip_range {}, the network plan was made for {}. Set \
                         network_cidr of data \"hct_network_plan\" to {}.",
                        network.id,
                        network.ip_range,
                        plan.network_cidr(),
                        network.ip_range
                    ),
                )
                .at(self.paths.network_plan.clone()),
            );
        }
        let subnet = plan.node_subnet().to_string();
        if !network
            .subnets
            .iter()
            .any(|s| s.ip_range == subnet && s.kind == "cloud")
        {
            found.push(
                Diagnostic::error(
                    "Node subnet missing",
                    format!(
                        "Network {} has no cloud subnet {subnet} (it has: {}). Servers can only \
                         get IPs inside a subnet: add resource \"hcloud_network_subnet\" with \
                         ip_range = \"{subnet}\" and type = \"cloud\", or fix node_subnet of the \
                         plan.",
                        network.id,
                        describe(
                            network
                                .subnets
                                .iter()
                                .map(|s| format!("{} ({})", s.ip_range, s.kind))
                        )
                    ),
                )
                .at(self.paths.network_plan.clone()),
            );
        }
        if !network.routes.iter().any(|r| r.destination == "0.0.0.0/0") {
            found.push(
                Diagnostic::error(
                    "No default route in the network",
                    format!(
                        "Network {} has no route 0.0.0.0/0: private-only nodes have no egress \
                         (they cannot pull Talos or Kubernetes images). Add a route 0.0.0.0/0 → \
                         your NAT gateway (resource \"hcloud_network_route\").",
                        network.id
                    ),
                )
                .at(self.paths.network_id.clone()),
            );
        }
        let servers = network.servers.len() + self.new_servers;
        if servers > MAX_SERVERS_PER_NETWORK as usize {
            found.push(
                Diagnostic::error(
                    "Too many servers for one network",
                    format!(
                        "Network {} has {} servers and this change adds {}; Hetzner allows \
                         {MAX_SERVERS_PER_NETWORK} per network. Make fewer or smaller pools.",
                        network.id,
                        network.servers.len(),
                        self.new_servers
                    ),
                )
                .at(self.paths.network_plan.clone()),
            );
        }
    }

    /// The Hetzner architecture (`x86`/`arm`) of a usable image.
    fn check_image(
        &self,
        image: &crate::hcloud::models::Image,
        found: &mut Diagnostics,
    ) -> Option<String> {
        let at = self.paths.image_id.clone();
        if image.status != "available" {
            found.push(
                Diagnostic::error(
                    "Talos image not available",
                    format!(
                        "Image {} is {:?}; servers can only be created from an available image. \
                         Wait for the snapshot to finish, or build it again.",
                        image.id, image.status
                    ),
                )
                .at(at),
            );
            return None;
        }
        match image.labels.get("os").map(String::as_str) {
            Some("talos") => {}
            _ => found.push(
                Diagnostic::warning(
                    "Image not labelled as Talos",
                    format!(
                        "Image {} has no label os=talos, so hct cannot tell it holds Talos. \
                         Images built by resource \"hct_talos_image\" are labelled.",
                        image.id
                    ),
                )
                .at(at.clone()),
            ),
        }
        if let Some(version) = image.labels.get("version")
            && TalosVersion::parse(version).as_ref() != Ok(self.talos_version)
        {
            found.push(
                Diagnostic::error(
                    "Image holds another Talos release",
                    format!(
                        "Image {} holds Talos {version}, talos_version is {}. The machine config \
                         is made for talos_version: use an image of that release.",
                        image.id, self.talos_version
                    ),
                )
                .at(at),
            );
        }
        Some(image.architecture.clone())
    }
}

fn describe(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datacenters_become_locations_with_a_warning() {
        let (name, warning) = location("nbg1-dc3", AttrPath::attr("location"));
        assert_eq!(name, "nbg1");
        assert!(!warning.unwrap().is_error());
        let (name, warning) = location("fsn1", AttrPath::attr("location"));
        assert_eq!(name, "fsn1");
        assert!(warning.is_none());
    }
}
