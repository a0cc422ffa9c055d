//! `hearth cluster certs`: TLS certificates for a fleet, as CockroachDB's `cert create-ca` and
//! `create-node` make them — a new authority (`ca.pem`) and one certificate signed by it (`cert.pem`, its key
//! in `key.pem`, readable by its owner alone) that names every host of the fleet, 127.0.0.1 and localhost,
//! for the fleet's servers and clients alike. The authority's key is not kept: a fleet that gains a host
//! gets a new set. Operators with certificates of their own give those to `--tls-dir` instead.
//!
//! ```text
//! hearth cluster certs --out tls --host node1.example --host node2.example
//! hearth cluster start --tls-dir tls --hosts workers
//! ```

use std::io::Write;
use std::net::ToSocketAddrs;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use clap::Args;
use hearth_engine::ballista::{CA_FILE, CERT_FILE, FleetTls, KEY_FILE};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};

use super::CommandResult;
use super::failed::Failed;

/// `hearth cluster certs`'s arguments.
#[derive(Debug, Args)]
pub struct CertsArgs {
    /// The directory to write ca.pem, cert.pem and key.pem into (made if missing; files there are not
    /// replaced).
    #[arg(long)]
    out: PathBuf,
    /// A host name or address the fleet runs on (repeat for each): named with every address it resolves to
    /// (127.0.0.1 and localhost always are).
    #[arg(long = "host")]
    hosts: Vec<String>,
}

/// Writes a new authority and a fleet certificate signed by it into `args.out`.
pub fn run(args: CertsArgs) -> CommandResult {
    let failed = |e: rcgen::Error| Failed::because("cannot make the certificates", e);
    let mut authority = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
    authority.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    authority.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    authority
        .distinguished_name
        .push(DnType::CommonName, "hearth fleet authority");
    let authority_key = KeyPair::generate().map_err(failed)?;
    let authority_cert = authority.self_signed(&authority_key).map_err(failed)?;

    // Each host by name and by every address it resolves to here (the fleet's processes advertise
    // addresses); a name this machine cannot resolve goes in as it is.
    let mut names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    for host in &args.hosts {
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
    let mut fleet = CertificateParams::new(names.clone()).map_err(failed)?;
    fleet.distinguished_name.push(DnType::CommonName, "hearth fleet");
    fleet.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().map_err(failed)?;
    let cert = fleet
        .signed_by(&key, &Issuer::new(authority, authority_key))
        .map_err(failed)?;

    std::fs::create_dir_all(&args.out).map_err(|e| Failed::file(&args.out, e))?;
    if let Some(taken) = [CA_FILE, CERT_FILE, KEY_FILE]
        .iter()
        .map(|name| args.out.join(name))
        .find(|file| file.exists())
    {
        return Err(format!("{}: already exists; certificates are never replaced", taken.display()).into());
    }
    write_new(&args.out.join(CA_FILE), &authority_cert.pem(), 0o644)?;
    write_new(&args.out.join(CERT_FILE), &cert.pem(), 0o644)?;
    write_new(&args.out.join(KEY_FILE), &key.serialize_pem(), 0o600)?;
    FleetTls::read(&args.out)?;
    println!(
        "Wrote {CA_FILE}, {CERT_FILE} and {KEY_FILE} (for {}) to {}",
        names.join(", "),
        args.out.display()
    );
    println!(
        "Start a fleet with them: hearth cluster start --tls-dir {}",
        args.out.display()
    );
    Ok(())
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
