//! The Kubernetes images of a machine config: the control-plane components
//! Talos runs as static pods (`cluster.apiServer.image`,
//! `cluster.controllerManager.image`, `cluster.scheduler.image`; kube-proxy's
//! `cluster.proxy.image`) and kubelet (`machine.kubelet.image`), or from
//! Talos v1.14 the `image` of their documents (`KubeAPIServerConfig`, …,
//! `KubeletConfig`), read where the config has them. A Kubernetes upgrade
//! first moves only the control-plane images of the config a node runs, as
//! `talosctl upgrade-k8s` patches them, and the kubelet later.

use serde_json::{Value, json};

use super::documents::{of_kind_mut, v1alpha1, v1alpha1_mut};
use super::multidoc_v1_14::setting;
use super::{ConfigError, MachineConfig};
use crate::talos::release::KubernetesVersion;
use crate::talos::yaml;

/// The control-plane components Talos runs as static pods on each control
/// plane, with where their image sits: under `cluster`, or in a document.
pub const CONTROL_PLANE_COMPONENTS: [(&str, Place); 3] = [
    ("kube-apiserver", ("apiServer", "KubeAPIServerConfig")),
    (
        "kube-controller-manager",
        ("controllerManager", "KubeControllerManagerConfig"),
    ),
    ("kube-scheduler", ("scheduler", "KubeSchedulerConfig")),
];

/// Where an image sits: the section under v1alpha1's `cluster`, or the
/// v1.14 document of that kind.
pub type Place = (&'static str, &'static str);

/// kube-proxy's image sits under `cluster.proxy` (a DaemonSet, also when
/// disabled the config names it).
const PROXY: (&str, Place) = ("kube-proxy", ("proxy", "KubeProxyConfig"));

/// The image at `(section, kind)`: the document's when the config has it.
fn image_at(documents: &[Value], (section, kind): Place) -> Option<String> {
    let main = v1alpha1(documents)?;
    let legacy = format!("/cluster/{section}/image");
    let (found, _) = setting(documents, main, (kind, "/image"), &legacy);
    found.and_then(Value::as_str).map(str::to_string)
}

/// The image of a control-plane component (or kube-proxy) of a release.
pub fn control_plane_image(component: &str, kubernetes: &KubernetesVersion) -> String {
    format!("registry.k8s.io/{component}:{kubernetes}")
}

/// Talos' kubelet image of a release.
pub fn kubelet_image(kubernetes: &KubernetesVersion) -> String {
    format!("ghcr.io/siderolabs/kubelet:{kubernetes}")
}

/// The images a config names (None where it names none: Talos' default).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunningImages {
    /// By component name (`kube-apiserver`, …), control planes only.
    pub control_plane: Vec<(String, Option<String>)>,
    pub kubelet: Option<String>,
}

impl RunningImages {
    /// Reads the images of a config's v1alpha1 document.
    pub fn of(config: &str) -> Result<Self, ConfigError> {
        let documents =
            yaml::parse_documents(config).map_err(|e| ConfigError::RunningConfig(e.to_string()))?;
        let Some(main) = v1alpha1(&documents) else {
            return Ok(Self::default());
        };
        let control_plane =
            if main.pointer("/machine/type").and_then(Value::as_str) == Some("worker") {
                Vec::new()
            } else {
                CONTROL_PLANE_COMPONENTS
                    .iter()
                    .map(|(component, place)| (component.to_string(), image_at(&documents, *place)))
                    .collect()
            };
        let (kubelet, _) = setting(
            &documents,
            main,
            ("KubeletConfig", "/image"),
            "/machine/kubelet/image",
        );
        Ok(Self {
            control_plane,
            kubelet: kubelet.and_then(Value::as_str).map(str::to_string),
        })
    }

    /// The components whose image is not `kubernetes`'s.
    pub fn behind(&self, kubernetes: &KubernetesVersion) -> Vec<String> {
        self.control_plane
            .iter()
            .filter(|(component, image)| {
                image.as_deref() != Some(control_plane_image(component, kubernetes).as_str())
            })
            .map(|(component, _)| component.clone())
            .collect()
    }

    /// The release of the kube-apiserver image's tag, if it names one.
    pub fn api_server(&self) -> Option<KubernetesVersion> {
        self.control_plane
            .iter()
            .find(|(component, _)| component == "kube-apiserver")
            .and_then(|(_, image)| image.as_deref())
            .and_then(tag)
    }

    /// The release of the kubelet image's tag, if it names one.
    pub fn kubelet_release(&self) -> Option<KubernetesVersion> {
        self.kubelet.as_deref().and_then(tag)
    }
}

/// The release an image's tag names (`…/kube-apiserver:v1.35.2`).
fn tag(image: &str) -> Option<KubernetesVersion> {
    let (_, tag) = image.rsplit_once(':')?;
    KubernetesVersion::parse(tag).ok()
}

/// The running config `config` with its control-plane images (and kube-
/// proxy's) moved to `kubernetes`, everything else as it was.
pub fn with_control_plane_images(
    config: &str,
    kubernetes: &KubernetesVersion,
) -> Result<MachineConfig, ConfigError> {
    let mut documents =
        yaml::parse_documents(config).map_err(|e| ConfigError::RunningConfig(e.to_string()))?;
    for (component, (section, kind)) in CONTROL_PLANE_COMPONENTS.iter().chain([&PROXY]) {
        let image = json!(control_plane_image(component, kubernetes));
        if let Some(document) = of_kind_mut(&mut documents, kind) {
            document["image"] = image;
            continue;
        }
        let main = v1alpha1_mut(&mut documents)
            .ok_or_else(|| ConfigError::RunningConfig("no v1alpha1 document".into()))?;
        if !main["cluster"].is_object() {
            return Err(ConfigError::RunningConfig("no cluster section".into()));
        }
        let section = &mut main["cluster"][*section];
        if section.is_null() {
            *section = json!({});
        }
        section["image"] = image;
    }
    Ok(MachineConfig(yaml::to_string(&documents)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNNING: &str = "version: v1alpha1
machine:
  type: controlplane
  kubelet:
    image: ghcr.io/siderolabs/kubelet:v1.35.2
cluster:
  apiServer:
    image: registry.k8s.io/kube-apiserver:v1.35.2
    certSANs:
      - 10.0.128.17
  controllerManager:
    image: registry.k8s.io/kube-controller-manager:v1.35.2
  scheduler:
    image: registry.k8s.io/kube-scheduler:v1.35.2
---
apiVersion: v1alpha1
kind: HostnameConfig
hostname: noreturn-cp-1
";

    #[test]
    fn moves_only_the_control_plane_images() {
        let to: KubernetesVersion = "v1.36.3".parse().unwrap();
        let before = RunningImages::of(RUNNING).unwrap();
        assert_eq!(before.behind(&to).len(), 3);
        assert_eq!(before.api_server(), "v1.35.2".parse().ok());
        let moved = with_control_plane_images(RUNNING, &to).unwrap();
        let after = RunningImages::of(moved.as_str()).unwrap();
        assert!(after.behind(&to).is_empty(), "{after:?}");
        assert_eq!(after.kubelet, before.kubelet, "kubelet stays");
        assert!(
            moved
                .as_str()
                .contains("registry.k8s.io/kube-proxy:v1.36.3")
        );
        assert!(moved.as_str().contains("10.0.128.17"), "the rest is kept");
        assert!(moved.as_str().contains("hostname: noreturn-cp-1"));
    }

    /// Talos v1.14 keeps the images in the components' documents.
    #[test]
    fn reads_and_moves_the_images_of_v1_14_documents() {
        let running = "version: v1alpha1\nmachine:\n  type: controlplane\ncluster:\n  token: x\n---\n\
            apiVersion: v1alpha1\nkind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.36.3\n---\n\
            apiVersion: v1alpha1\nkind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.36.3\n---\n\
            apiVersion: v1alpha1\nkind: KubeControllerManagerConfig\nimage: registry.k8s.io/kube-controller-manager:v1.36.3\n---\n\
            apiVersion: v1alpha1\nkind: KubeSchedulerConfig\nimage: registry.k8s.io/kube-scheduler:v1.36.3\n---\n\
            apiVersion: v1alpha1\nkind: KubeProxyConfig\nenabled: false\nimage: registry.k8s.io/kube-proxy:v1.36.3\n";
        let to: KubernetesVersion = "v1.37.2".parse().unwrap();
        let before = RunningImages::of(running).unwrap();
        assert_eq!(before.api_server(), "v1.36.3".parse().ok());
        assert_eq!(before.kubelet_release(), "v1.36.3".parse().ok());
        let moved = with_control_plane_images(running, &to).unwrap();
        let after = RunningImages::of(moved.as_str()).unwrap();
        assert!(after.behind(&to).is_empty(), "{after:?}");
        assert_eq!(after.kubelet, before.kubelet);
        let text = moved.as_str();
        assert!(
            text.contains("registry.k8s.io/kube-proxy:v1.37.2"),
            "{text}"
        );
        assert!(
            !text.contains("apiServer"),
            "nothing added to v1alpha1: {text}"
        );
    }

    #[test]
    fn workers_have_only_a_kubelet() {
        let worker = "version: v1alpha1\nmachine:\n  type: worker\n  kubelet:\n    image: ghcr.io/siderolabs/kubelet:v1.35.2\ncluster: {}\n";
        let images = RunningImages::of(worker).unwrap();
        assert!(images.control_plane.is_empty());
        assert_eq!(images.kubelet_release(), "v1.35.2".parse().ok());
    }
}
