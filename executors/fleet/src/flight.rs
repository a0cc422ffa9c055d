//! The executor's Arrow Flight server — shuffle data for its peers, results for drivers — served by hearth on
//! the executor's advertised Flight port: TLS when the fleet has it, and only calls that present the cluster
//! secret reach Ballista's Flight service ([`guarded`]). Peers and drivers present the secret in their
//! channel's user agent (see [`FleetAccess::endpoint_override`](hearth_exec::ballista::FleetAccess)); a
//! cluster-mode job's driver fetches its own jobs' partitions alone.

use std::sync::{Arc, Mutex};

use arrow_flight::flight_service_server::FlightServiceServer;
use axum::middleware;
use ballista_core::error::BallistaError;
use ballista_executor::ArrowFlightServerProvider;
use ballista_executor::flight_service::BallistaFlightService;
use hearth_exec::ballista::ClusterSecret;
use tokio::net::TcpListener;
use tonic::service::RoutesBuilder;

use super::front::serve;
use super::guard::{AnyJob, guarded};
use super::ownership::{JobOwners, fetches_of_own_jobs};

/// What Ballista calls to start the executor's Flight server: it serves on `listener` (bound by hearth on the
/// advertised address, whatever address Ballista names), with `tls` and `secret`, messages up to
/// `max_message` bytes, a job's driver only its own jobs' partitions (as `owners` knows them), until Ballista
/// shuts the executor down.
pub fn flight_front(
    listener: TcpListener,
    (tls, secret): (Option<Arc<rustls::ServerConfig>>, Option<ClusterSecret>),
    owners: JobOwners,
    max_message: usize,
) -> Arc<ArrowFlightServerProvider> {
    let listener = Mutex::new(Some(listener));
    Arc::new(move |work_dir, _ballista_address, mut shutdown, _config| {
        let listener = listener.lock().map(|mut listener| listener.take()).ok().flatten();
        let (tls, secret, owners) = (tls.clone(), secret.clone(), owners.clone());
        tokio::spawn(async move {
            let Some(listener) = listener else {
                return Err(BallistaError::Internal(
                    "the executor's Flight port was already handed to a server".into(),
                ));
            };
            let address = listener.local_addr().map_err(BallistaError::IoError)?;
            log::info!("Arrow Flight server listening on {address}");
            let flight = FlightServiceServer::new(BallistaFlightService::new(work_dir))
                .max_decoding_message_size(max_message)
                .max_encoding_message_size(max_message);
            let mut routes = RoutesBuilder::default();
            routes.add_service(flight);
            let own_jobs = middleware::from_fn_with_state(owners, fetches_of_own_jobs);
            let app = guarded(
                routes.routes().into_axum_router().layer(own_jobs),
                secret,
                "the executor's Flight server",
                AnyJob,
            );
            serve(listener, tls, app, async move { shutdown.recv().await })
                .await
                .map_err(BallistaError::IoError)
        })
    })
}
