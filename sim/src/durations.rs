//! How long each kind of action runs before it finishes.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

/// A set of durations for every command: `fast` for tests, `short` (the
/// default) keeps the real proportions at a fraction of the wait, and
/// `realistic` is about what Hetzner takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    Fast,
    #[default]
    Short,
    Realistic,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fast => "fast",
            Self::Short => "short",
            Self::Realistic => "realistic",
        }
    }
}

impl FromStr for Profile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fast" => Ok(Self::Fast),
            "short" => Ok(Self::Short),
            "realistic" => Ok(Self::Realistic),
            other => Err(format!(
                "unknown durations profile '{other}' (use fast, short or realistic)"
            )),
        }
    }
}

/// Every command with a duration of its own, for listings (`GET /_sim/durations`).
pub const COMMANDS: [&str; 32] = [
    "create_server",
    "start_server",
    "stop_server",
    "shutdown_server",
    "reset_server",
    "reboot_server",
    "delete_server",
    "create_image",
    "create_load_balancer",
    "change_load_balancer_type",
    "add_service",
    "update_service",
    "delete_service",
    "add_target",
    "remove_target",
    "change_algorithm",
    "change_server_type",
    "enable_rescue",
    "disable_rescue",
    "rescue_write_image",
    "attach_to_network",
    "detach_from_network",
    "change_alias_ips",
    "add_subnet",
    "delete_subnet",
    "add_route",
    "delete_route",
    "talos_boot",
    "talos_install",
    "talos_reboot",
    "talos_upgrade",
    "talos_etcd_join",
];

/// Milliseconds per profile: (fast, short, realistic).
fn table(command: &str) -> (u64, u64, u64) {
    match command {
        "create_server" => (150, 3_000, 12_000),
        "start_server" => (100, 1_500, 5_000),
        "stop_server" => (50, 1_000, 3_000),
        "shutdown_server" => (100, 2_000, 8_000),
        "reset_server" => (100, 1_500, 5_000),
        "reboot_server" => (100, 2_000, 8_000),
        "delete_server" => (50, 1_000, 4_000),
        "create_image" => (200, 5_000, 45_000),
        "create_load_balancer" => (100, 3_000, 15_000),
        "change_load_balancer_type" => (100, 2_000, 10_000),
        // A load balancer's services, targets and algorithm: Hetzner
        // answers these actions finished.
        "add_service" | "update_service" | "delete_service" | "add_target" | "remove_target"
        | "change_algorithm" => (0, 0, 0),
        "change_server_type" => (200, 5_000, 60_000),
        "enable_rescue" | "disable_rescue" => (50, 500, 2_000),
        // Not an action: a rescue system writing a Talos image to the disk.
        "rescue_write_image" => (100, 2_000, 40_000),
        "attach_to_network" | "detach_from_network" | "change_alias_ips" => (50, 1_000, 3_000),
        "add_subnet" | "delete_subnet" | "add_route" | "delete_route" => (50, 500, 2_000),
        // Not an action: a configured control plane finding a running etcd
        // member and being added (Talos retries its join every few seconds).
        "talos_etcd_join" => (300, 2_000, 10_000),
        _ => (50, 1_000, 3_000),
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Durations {
    pub profile: Profile,
    pub overrides: BTreeMap<String, Duration>,
}

impl Durations {
    pub fn new(profile: Profile) -> Self {
        Self {
            profile,
            overrides: BTreeMap::new(),
        }
    }

    pub fn with(mut self, command: &str, duration: Duration) -> Self {
        self.overrides.insert(command.to_string(), duration);
        self
    }

    pub fn for_command(&self, command: &str) -> Duration {
        if let Some(d) = self.overrides.get(command) {
            return *d;
        }
        let (fast, short, realistic) = table(command);
        Duration::from_millis(match self.profile {
            Profile::Fast => fast,
            Profile::Short => short,
            Profile::Realistic => realistic,
        })
    }

    /// Every listed command (and every override) with its duration in
    /// milliseconds, as a JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        let mut all: BTreeMap<String, u64> = COMMANDS
            .iter()
            .map(|c| (c.to_string(), 0))
            .chain(self.overrides.keys().map(|c| (c.clone(), 0)))
            .collect();
        for (command, ms) in &mut all {
            *ms = u64::try_from(self.for_command(command).as_millis()).unwrap_or(u64::MAX);
        }
        serde_json::json!({ "profile": self.profile.as_str(), "milliseconds": all })
    }

    /// Parses an override written `command=duration`, e.g. `create_image=2s`.
    pub fn parse_override(text: &str) -> Result<(String, Duration), String> {
        let (command, duration) = text
            .split_once('=')
            .ok_or_else(|| format!("expected COMMAND=DURATION, got '{text}'"))?;
        let duration = humantime::parse_duration(duration.trim())
            .map_err(|e| format!("bad duration in '{text}': {e}"))?;
        Ok((command.trim().to_string(), duration))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_and_overrides() {
        let d = Durations::new(Profile::Fast).with("create_image", Duration::from_secs(2));
        assert_eq!(d.for_command("create_image"), Duration::from_secs(2));
        assert_eq!(d.for_command("create_server"), Duration::from_millis(150));
        let realistic = Durations::new(Profile::Realistic);
        assert!(realistic.for_command("create_server") > d.for_command("create_server"));
        assert_eq!(
            Durations::parse_override("start_server=250ms").unwrap(),
            ("start_server".into(), Duration::from_millis(250))
        );
        assert!(Durations::parse_override("start_server").is_err());
        assert!("slow".parse::<Profile>().is_err());
        let listed = realistic
            .with("talos_boot", Duration::from_secs(7))
            .to_json();
        assert_eq!(listed["profile"], "realistic");
        assert_eq!(listed["milliseconds"]["create_server"], 12_000);
        assert_eq!(listed["milliseconds"]["talos_boot"], 7_000);
        assert_eq!(listed["milliseconds"]["talos_reboot"], 3_000);
        // Answered finished, as Hetzner answers them.
        assert_eq!(listed["milliseconds"]["add_service"], 0);
        assert_eq!(d.for_command("remove_target"), Duration::ZERO);
    }
}
