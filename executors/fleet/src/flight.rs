//! The executor's Arrow Flight server — shuffle data for its peers, results for drivers — admitting only calls
//! that present the fleet's secret. Ballista's own server is used, behind a check of every call's headers;
//! peers and drivers present the secret in their channel's user agent (see
//! [`ClusterSecret::endpoint_override`]).

use std::net::SocketAddr;
use std::sync::Arc;

use arrow_flight::flight_service_server::FlightServiceServer;
use ballista_core::error::BallistaError;
use ballista_core::utils::{GrpcServerConfig, create_grpc_server};
use ballista_executor::ArrowFlightServerProvider;
use ballista_executor::flight_service::BallistaFlightService;
use ballista_executor::shutdown::Shutdown;
use hearth_engine::ballista::ClusterSecret;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Status};

/// A Flight server for the executor whose calls must present `secret`; messages up to `max_message` bytes.
pub fn guarded_flight_server(secret: ClusterSecret, max_message: usize) -> Arc<ArrowFlightServerProvider> {
    let secret = Arc::new(secret);
    Arc::new(
        move |work_dir: String, address: SocketAddr, mut shutdown: Shutdown, config: GrpcServerConfig| {
            let secret = Arc::clone(&secret);
            tokio::spawn(async move {
                log::info!("Arrow Flight server (calls must present the cluster secret) listening on {address}");
                let flight = FlightServiceServer::new(BallistaFlightService::new(work_dir))
                    .max_decoding_message_size(max_message)
                    .max_encoding_message_size(max_message);
                let guarded = InterceptedService::new(flight, move |request: Request<()>| admit(&secret, request));
                create_grpc_server(&config)
                    .add_service(guarded)
                    .serve_with_shutdown(address, shutdown.recv())
                    .await
                    .map_err(BallistaError::TonicError)
            })
        },
    )
}

/// Lets a call through if it presents the secret; refuses it as UNAUTHENTICATED otherwise, logging the peer.
fn admit(secret: &ClusterSecret, request: Request<()>) -> Result<Request<()>, Status> {
    let header = |name: &str| request.metadata().get(name).and_then(|v| v.to_str().ok());
    if secret.admits(header("authorization"), header("user-agent")) {
        return Ok(request);
    }
    let peer = request
        .remote_addr()
        .map_or_else(|| "an unknown peer".to_string(), |a| a.to_string());
    log::warn!("refused an Arrow Flight call from {peer}: it did not present the cluster secret");
    Err(Status::unauthenticated("this fleet needs its cluster secret"))
}
