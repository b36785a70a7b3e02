//! Load Balancers, as hct uses them for a private API endpoint: created
//! without services, put on the network at a fixed IP, the public interface
//! turned off, then a label-selector target (private IPs) and TCP services
//! with TCP health checks. Also the catalog of load balancer types.

use reqwest::Method;
use serde::Deserialize;
use serde_json::json;
use tracing::info;

use super::client::{Client, Retry};
use super::error::{HcloudError, Missing};
use super::labels::LabelSelector;
use super::models::{Action, Labels, LoadBalancer, LoadBalancerType};

/// The health check of every service: a TCP connect to the target's port.
const HEALTH_INTERVAL_SECONDS: u32 = 5;
const HEALTH_TIMEOUT_SECONDS: u32 = 3;
const HEALTH_RETRIES: u32 = 2;

#[derive(Deserialize)]
struct CreateAnswer {
    load_balancer: LoadBalancer,
    action: Action,
}

#[derive(Deserialize)]
struct ActionEnvelope {
    action: Action,
}

impl Client {
    pub async fn load_balancers(
        &self,
        selector: &LabelSelector,
    ) -> Result<Vec<LoadBalancer>, HcloudError> {
        self.list(
            "load_balancers",
            "load_balancers",
            &[("label_selector", selector.to_string())],
        )
        .await
    }

    pub async fn load_balancer_type(
        &self,
        name: &str,
    ) -> Result<Option<LoadBalancerType>, HcloudError> {
        let found: Vec<LoadBalancerType> = self
            .list(
                "load_balancer_types",
                "load_balancer_types",
                &[("name", name.to_string())],
            )
            .await?;
        Ok(found.into_iter().find(|t| t.name == name))
    }

    /// Creates a load balancer without services or targets (nothing is
    /// served on its public interface before it is turned off). On
    /// `uniqueness_error` the one of that name is adopted when it carries
    /// all of `labels` (an earlier attempt whose answer was lost).
    pub async fn create_load_balancer(
        &self,
        name: &str,
        load_balancer_type: &str,
        location: &str,
        labels: &Labels,
    ) -> Result<(LoadBalancer, Option<Action>), HcloudError> {
        let body = json!({
            "name": name,
            "load_balancer_type": load_balancer_type,
            "location": location,
            "algorithm": {"type": "round_robin"},
            "labels": labels,
        });
        let created = self
            .call::<CreateAnswer>(
                Method::POST,
                "load_balancers",
                &[],
                Some(&body),
                Retry::Transient,
            )
            .await;
        match created {
            Ok(answer) => Ok((answer.load_balancer, Some(answer.action))),
            Err(e) if e.code() == Some("uniqueness_error") => {
                let found: Vec<LoadBalancer> = self
                    .list(
                        "load_balancers",
                        "load_balancers",
                        &[("name", name.to_string())],
                    )
                    .await?;
                let ours = found.into_iter().find(|lb| {
                    lb.name == name && labels.iter().all(|(k, v)| lb.labels.get(k) == Some(v))
                });
                match ours {
                    Some(lb) => {
                        info!(load_balancer = %name, id = lb.id, "adopting existing load balancer with our labels");
                        Ok((lb, None))
                    }
                    None => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    async fn load_balancer_action(
        &self,
        id: i64,
        action: &str,
        body: serde_json::Value,
        retry: Retry,
    ) -> Result<Action, HcloudError> {
        let answer = self
            .call::<ActionEnvelope>(
                Method::POST,
                &format!("load_balancers/{id}/actions/{action}"),
                &[],
                Some(&body),
                retry,
            )
            .await?;
        Ok(answer.action)
    }

    pub async fn attach_load_balancer(
        &self,
        id: i64,
        network: i64,
        ip: std::net::Ipv4Addr,
    ) -> Result<Action, HcloudError> {
        self.load_balancer_action(
            id,
            "attach_to_network",
            json!({"network": network, "ip": ip.to_string()}),
            Retry::AlsoLockedAndSubnet,
        )
        .await
    }

    pub async fn disable_load_balancer_public_interface(
        &self,
        id: i64,
    ) -> Result<Action, HcloudError> {
        self.load_balancer_action(id, "disable_public_interface", json!({}), Retry::AlsoLocked)
            .await
    }

    /// Every server `selector` matches, reached at its private IP.
    pub async fn add_load_balancer_selector_target(
        &self,
        id: i64,
        selector: &LabelSelector,
    ) -> Result<Action, HcloudError> {
        self.load_balancer_action(
            id,
            "add_target",
            json!({
                "type": "label_selector",
                "label_selector": {"selector": selector.to_string()},
                "use_private_ip": true,
            }),
            Retry::AlsoLocked,
        )
        .await
    }

    /// A TCP service from `port` to the same port on the targets, healthy
    /// while the target accepts connections there.
    pub async fn add_load_balancer_tcp_service(
        &self,
        id: i64,
        port: u16,
    ) -> Result<Action, HcloudError> {
        self.load_balancer_action(
            id,
            "add_service",
            json!({
                "protocol": "tcp",
                "listen_port": port,
                "destination_port": port,
                "proxyprotocol": false,
                "health_check": {
                    "protocol": "tcp",
                    "port": port,
                    "interval": HEALTH_INTERVAL_SECONDS,
                    "timeout": HEALTH_TIMEOUT_SECONDS,
                    "retries": HEALTH_RETRIES,
                },
            }),
            Retry::AlsoLocked,
        )
        .await
    }

    /// Deletes the load balancer; Ok when it was already gone.
    pub async fn delete_load_balancer(&self, id: i64) -> Result<(), HcloudError> {
        self.call_json(
            Method::DELETE,
            &format!("load_balancers/{id}"),
            &[],
            None,
            Retry::AlsoLocked,
        )
        .await
        .or_missing()?;
        Ok(())
    }
}
