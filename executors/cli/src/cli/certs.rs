//! `hearth cluster certs`: TLS certificates for a fleet, a certificate per role as Kubernetes gives each
//! component its own: a new authority (`ca.pem`) and, signed by it, one certificate each for the scheduler,
//! the executors and clients (`scheduler/`, `executor/`, `client/`: each with `cert.pem`, its key in
//! `key.pem` readable by its owner alone, and a copy of `ca.pem`). The role is in each certificate's subject
//! and every server admits only the roles with business on its port (an executor's task port: the
//! scheduler's alone). The scheduler's and executors' certificates name every host of the fleet, 127.0.0.1
//! and localhost. Each is valid for `--days` (365 by default); `hearth status` shows how long is left. The
//! authority's key is not kept: a fleet that gains a host, or whose certificates near their end, gets a new
//! set. Copy to each host only its role's directory.
//!
//! ```text
//! hearth cluster certs --out tls --host node1.example --host node2.example --days 90
//! hearth cluster start --tls-dir tls --hosts workers
//! ```

use std::io::Write;
use std::net::ToSocketAddrs;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use chrono::{Datelike, NaiveDate, Utc};
use clap::Args;
use hearth_exec::ballista::{CA_FILE, CERT_FILE, FleetTls, KEY_FILE, Role};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    date_time_ymd,
};

use super::CommandResult;
use super::failed::Failed;

/// `hearth cluster certs`'s arguments.
#[derive(Debug, Args)]
pub struct CertsArgs {
    /// The directory to write ca.pem and a directory per role (scheduler, executor, client) into (made if
    /// missing; files there are not replaced).
    #[arg(long)]
    out: PathBuf,
    /// A host name or address the fleet runs on (repeat for each): named with every address it resolves to
    /// (127.0.0.1 and localhost always are).
    #[arg(long = "host")]
    hosts: Vec<String>,
    /// How many days the certificates are valid, from today.
    #[arg(long, default_value_t = 365, value_parser = clap::value_parser!(u32).range(1..=3650))]
    days: u32,
}

/// Writes a new authority and a certificate per role signed by it into `args.out`.
pub fn run(args: CertsArgs) -> CommandResult {
    let (from, until) = validity(args.days);
    let names = host_names(&args.hosts);
    let set =
        CertificateSet::make(&names, from, until).map_err(|e| Failed::because("cannot make the certificates", e))?;
    let files: Vec<PathBuf> = std::iter::once(args.out.join(CA_FILE))
        .chain(
            Role::ALL
                .iter()
                .flat_map(|role| [CA_FILE, CERT_FILE, KEY_FILE].map(|name| args.out.join(role.name()).join(name))),
        )
        .collect();
    if let Some(taken) = files.iter().find(|file| file.exists()) {
        return Err(format!("{}: already exists; certificates are never replaced", taken.display()).into());
    }
    set.write(&args.out)?;
    for role in Role::ALL {
        FleetTls::read_as(&args.out, role)?;
    }
    println!(
        "Wrote {CA_FILE} and a certificate each for scheduler/, executor/ and client/ to {}, valid until {until}",
        args.out.display()
    );
    println!("The scheduler's and executors' name {}", names.join(", "));
    println!(
        "Start a fleet with them: hearth cluster start --tls-dir {}",
        args.out.display()
    );
    println!("On other hosts, give each process only its role's directory (hearth executor --tls-dir DIR/executor).");
    Ok(())
}

/// The first and last day certificates made today for `days` days are valid: from yesterday (for clocks
/// a little behind), until `days` days from today.
fn validity(days: u32) -> (NaiveDate, NaiveDate) {
    let today = Utc::now().date_naive();
    (today - chrono::Days::new(1), today + chrono::Days::new(u64::from(days)))
}

/// 127.0.0.1, localhost, and each host by name and by every address it resolves to here (the fleet's
/// processes advertise addresses); a name this machine cannot resolve goes in as it is.
fn host_names(hosts: &[String]) -> Vec<String> {
    let mut names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    for host in hosts {
        let addresses: Vec<String> = (host.as_str(), 0)
            .to_socket_addrs()
            .map(|found| found.map(|a| a.ip().to_string()).collect())
            .unwrap_or_default();
        for name in std::iter::once(host.clone()).chain(addresses) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// An authority's certificate and, for each role, a certificate it signed with its key.
struct CertificateSet {
    authority: String,
    roles: Vec<(Role, String, String)>,
}

impl CertificateSet {
    /// A new authority and a certificate per role, valid from `from` until `until`, servers' naming `names`.
    fn make(names: &[String], from: NaiveDate, until: NaiveDate) -> Result<Self, rcgen::Error> {
        let day = |date: NaiveDate| {
            // Months and days are 1-based and small; chrono's dates are within rcgen's years.
            date_time_ymd(date.year(), date.month() as u8, date.day() as u8)
        };
        let mut authority = CertificateParams::new(Vec::<String>::new())?;
        authority.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        authority.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        authority
            .distinguished_name
            .push(DnType::CommonName, "hearth fleet authority");
        (authority.not_before, authority.not_after) = (day(from), day(until));
        let authority_key = KeyPair::generate()?;
        let authority_pem = authority.self_signed(&authority_key)?.pem();
        let issuer = Issuer::new(authority, authority_key);
        let mut roles = Vec::new();
        for role in Role::ALL {
            let mut params = CertificateParams::new(match role.serves() {
                true => names.to_vec(),
                false => Vec::new(),
            })?;
            params
                .distinguished_name
                .push(DnType::CommonName, format!("hearth {role}"));
            params
                .distinguished_name
                .push(DnType::OrganizationalUnitName, role.unit());
            params.extended_key_usages = match role.serves() {
                true => vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth],
                false => vec![ExtendedKeyUsagePurpose::ClientAuth],
            };
            (params.not_before, params.not_after) = (day(from), day(until));
            let key = KeyPair::generate()?;
            let cert = params.signed_by(&key, &issuer)?;
            roles.push((role, cert.pem(), key.serialize_pem()));
        }
        Ok(Self {
            authority: authority_pem,
            roles,
        })
    }

    /// Writes `ca.pem` into `out`, and each role's directory (its certificate, key and a copy of `ca.pem`).
    fn write(&self, out: &Path) -> Result<(), Failed> {
        std::fs::create_dir_all(out).map_err(|e| Failed::file(out, e))?;
        write_new(&out.join(CA_FILE), &self.authority, 0o644)?;
        for (role, cert, key) in &self.roles {
            let dir = out.join(role.name());
            std::fs::create_dir_all(&dir).map_err(|e| Failed::file(&dir, e))?;
            write_new(&dir.join(CA_FILE), &self.authority, 0o644)?;
            write_new(&dir.join(CERT_FILE), cert, 0o644)?;
            write_new(&dir.join(KEY_FILE), key, 0o600)?;
        }
        Ok(())
    }
}

/// Writes `text` to a new file `path` with `mode`; an existing file is left as it is and named.
fn write_new(path: &Path, text: &str, mode: u32) -> Result<(), Failed> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| Failed::file(path, e))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| Failed::file(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_reads_its_own_certificate_with_its_expiry() {
        let out = tempfile::tempdir().unwrap();
        let (from, until) = validity(30);
        let set = CertificateSet::make(&host_names(&[]), from, until).unwrap();
        set.write(out.path()).unwrap();
        for role in Role::ALL {
            let tls = FleetTls::read_as(out.path(), role).unwrap();
            assert_eq!(tls.certificate().role, Some(role));
            let now = Utc::now().timestamp();
            assert!(
                (29..=30).contains(&tls.certificate().days_left(now)),
                "{:?}",
                tls.certificate()
            );
        }
        // A role's own directory read for another role is refused, naming both.
        let error = FleetTls::read_as(&out.path().join("client"), Role::Executor)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("client's certificate") && error.contains("executor needs its own"),
            "{error}"
        );
        // A scheduler given its own directory finds its drivers' client certificate beside it; given that
        // directory alone, it says what is missing.
        let scheduler = FleetTls::read_as(&out.path().join("scheduler"), Role::Scheduler).unwrap();
        assert_eq!(
            scheduler.as_role(Role::Client).unwrap().certificate().role,
            Some(Role::Client)
        );
        let alone = tempfile::tempdir().unwrap();
        let scheduler_only = alone.path().join("scheduler");
        std::fs::create_dir(&scheduler_only).unwrap();
        for name in [CA_FILE, CERT_FILE, KEY_FILE] {
            std::fs::copy(out.path().join("scheduler").join(name), scheduler_only.join(name)).unwrap();
        }
        let scheduler = FleetTls::read_as(&scheduler_only, Role::Scheduler).unwrap();
        let error = scheduler.as_role(Role::Client).unwrap_err().to_string();
        assert!(error.contains("holds no client certificate"), "{error}");
    }

    #[test]
    fn an_expired_certificate_is_refused_naming_when_it_expired() {
        let out = tempfile::tempdir().unwrap();
        let today = Utc::now().date_naive();
        let set = CertificateSet::make(
            &host_names(&[]),
            today - chrono::Days::new(10),
            today - chrono::Days::new(2),
        )
        .unwrap();
        set.write(out.path()).unwrap();
        let error = FleetTls::read_as(out.path(), Role::Scheduler).unwrap_err().to_string();
        assert!(error.contains("cert.pem") && error.contains("expired"), "{error}");
    }
}
