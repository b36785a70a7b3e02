//! Who is calling and what they may do. Talos reads a client's roles from
//! its certificate's organizations (`os:admin`, `os:operator`, …), and
//! grants each call to a set of roles.

use std::fmt;

use tonic::Status;

/// The caller of one connection, as its TLS handshake showed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// Maintenance mode: apid asks for no client certificate.
    Anonymous,
    /// A certificate that chains to the node's OS CA.
    Verified { roles: Vec<String> },
    /// A certificate that does not.
    Untrusted { reason: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    ApplyConfiguration,
    /// The COSI state API's List (resources such as the manifests).
    CosiList,
    Bootstrap,
    EtcdMemberList,
    /// The upload of a snapshot to recover etcd from (client streaming).
    EtcdRecover,
    EtcdSnapshot,
    Kubeconfig,
    Read,
    Reboot,
    Reset,
    ServiceList,
    Upgrade,
    Version,
}

impl Call {
    /// The roles Talos (v1.12 machined) grants the call to. `os:etcd:backup`
    /// may take etcd snapshots and look at etcd, nothing else; restoring
    /// one (EtcdRecover) is os:admin's alone.
    fn roles(self) -> &'static [&'static str] {
        const ADMIN: &[&str] = &["os:admin"];
        match self {
            Self::Version | Self::ServiceList | Self::CosiList => {
                &["os:admin", "os:operator", "os:reader"]
            }
            Self::EtcdMemberList => &["os:admin", "os:operator", "os:reader", "os:etcd:backup"],
            Self::EtcdSnapshot => &["os:admin", "os:operator", "os:etcd:backup"],
            Self::Reboot => &["os:admin", "os:operator"],
            Self::ApplyConfiguration
            | Self::Bootstrap
            | Self::EtcdRecover
            | Self::Kubeconfig
            | Self::Read
            | Self::Reset
            | Self::Upgrade => ADMIN,
        }
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Lets the call through, or answers as Talos' authorizer would.
pub fn authorize(caller: &Caller, call: Call) -> Result<(), Status> {
    match caller {
        Caller::Anonymous => Ok(()),
        Caller::Untrusted { reason } => Err(Status::unauthenticated(format!(
            "the client certificate is not signed by the node's OS CA: {reason}"
        ))),
        Caller::Verified { roles } if roles.iter().any(|r| call.roles().contains(&r.as_str())) => {
            Ok(())
        }
        Caller::Verified { roles } => Err(Status::permission_denied(format!(
            "not authorized: {call} needs one of the roles {:?}, the client certificate has {roles:?}",
            call.roles()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use tonic::Code;

    use super::*;

    fn with(roles: &[&str]) -> Caller {
        Caller::Verified {
            roles: roles.iter().map(|r| r.to_string()).collect(),
        }
    }

    #[test]
    fn admins_may_do_everything_readers_only_look() {
        let calls = [
            Call::ApplyConfiguration,
            Call::Bootstrap,
            Call::EtcdMemberList,
            Call::EtcdRecover,
            Call::EtcdSnapshot,
            Call::Kubeconfig,
            Call::Reboot,
            Call::Reset,
            Call::ServiceList,
            Call::Upgrade,
            Call::Version,
        ];
        for call in calls {
            assert!(authorize(&with(&["os:admin"]), call).is_ok(), "{call}");
        }
        let reader = with(&["os:reader"]);
        assert!(authorize(&reader, Call::Version).is_ok());
        let denied = authorize(&reader, Call::Kubeconfig).unwrap_err();
        assert_eq!(denied.code(), Code::PermissionDenied);
        assert!(authorize(&with(&["os:operator"]), Call::Reboot).is_ok());
        assert_eq!(
            authorize(&with(&[]), Call::Version).unwrap_err().code(),
            Code::PermissionDenied
        );
        let stranger = Caller::Untrusted {
            reason: "UnknownIssuer".into(),
        };
        assert_eq!(
            authorize(&stranger, Call::Version).unwrap_err().code(),
            Code::Unauthenticated
        );
        assert!(authorize(&Caller::Anonymous, Call::ApplyConfiguration).is_ok());
    }

    #[test]
    fn etcd_snapshots_are_for_admins_operators_and_etcd_backup_only() {
        for role in ["os:admin", "os:operator", "os:etcd:backup"] {
            assert!(
                authorize(&with(&[role]), Call::EtcdSnapshot).is_ok(),
                "{role}"
            );
        }
        for role in [
            "os:reader",
            "os:image:verifier",
            "os:meta:writer",
            "os:impersonator",
        ] {
            let denied = authorize(&with(&[role]), Call::EtcdSnapshot).unwrap_err();
            assert_eq!(denied.code(), Code::PermissionDenied, "{role}");
        }
        // The backup role takes snapshots and lists members, nothing else.
        let backup = with(&["os:etcd:backup"]);
        assert!(authorize(&backup, Call::EtcdMemberList).is_ok());
        for call in [
            Call::Version,
            Call::Kubeconfig,
            Call::Read,
            Call::Reboot,
            Call::EtcdRecover,
        ] {
            assert_eq!(
                authorize(&backup, call).unwrap_err().code(),
                Code::PermissionDenied,
                "{call}"
            );
        }
    }

    #[test]
    fn only_admins_recover_etcd() {
        assert!(authorize(&with(&["os:admin"]), Call::EtcdRecover).is_ok());
        for role in [
            "os:operator",
            "os:reader",
            "os:etcd:backup",
            "os:meta:writer",
            "os:impersonator",
        ] {
            let denied = authorize(&with(&[role]), Call::EtcdRecover).unwrap_err();
            assert_eq!(denied.code(), Code::PermissionDenied, "{role}");
        }
    }
}
