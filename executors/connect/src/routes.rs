//! The gRPC side of `spark.connect.SparkConnectService`: each RPC's path routed to [`Rpcs`], with the bearer
//! token checked first. The Apache Spark project's crate carries the messages and a client; this is the server
//! half that tonic would generate from the service definition.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

use spark_connect_proto as sc;
use tonic::body::Body;
use tonic::codegen::{BoxFuture, Service, http};
use tonic::server::{Grpc, NamedService, ServerStreamingService, UnaryService};
use tonic::{Request, Response, Status};
use tonic_prost::ProstCodec;

use crate::auth::Token;
use crate::rpcs::{ResponseStream, Rpcs};

/// The largest message a client may send (a plan with a local relation inside it).
const MAX_REQUEST_BYTES: usize = 128 << 20;

/// `SparkConnectService` over [`Rpcs`], for tonic's server.
#[derive(Clone)]
pub(crate) struct SparkConnectService {
    rpcs: Arc<Rpcs>,
    token: Arc<Token>,
}

impl SparkConnectService {
    pub(crate) fn new(rpcs: Arc<Rpcs>, token: Arc<Token>) -> Self {
        Self { rpcs, token }
    }
}

impl NamedService for SparkConnectService {
    const NAME: &'static str = "spark.connect.SparkConnectService";
}

/// A unary RPC served by an async closure.
struct Unary<F>(F);

impl<Req, Resp, F, Fut> UnaryService<Req> for Unary<F>
where
    F: FnMut(Request<Req>) -> Fut,
    Fut: Future<Output = Result<Response<Resp>, Status>> + Send + 'static,
{
    type Response = Resp;
    type Future = Fut;

    fn call(&mut self, request: Request<Req>) -> Fut {
        (self.0)(request)
    }
}

/// `ExecutePlan`: the plan's answers, streamed.
struct ExecutePlan(Arc<Rpcs>);

impl ServerStreamingService<sc::ExecutePlanRequest> for ExecutePlan {
    type Response = sc::ExecutePlanResponse;
    type ResponseStream = ResponseStream<sc::ExecutePlanResponse>;
    type Future = BoxFuture<Response<Self::ResponseStream>, Status>;

    fn call(&mut self, request: Request<sc::ExecutePlanRequest>) -> Self::Future {
        let rpcs = Arc::clone(&self.0);
        Box::pin(async move { Ok(Response::new(rpcs.execute_plan(request.into_inner()))) })
    }
}

/// `ReattachExecute`: refused, as no operation is left to reattach to.
struct ReattachExecute(Arc<Rpcs>);

impl ServerStreamingService<sc::ReattachExecuteRequest> for ReattachExecute {
    type Response = sc::ExecutePlanResponse;
    type ResponseStream = ResponseStream<sc::ExecutePlanResponse>;
    type Future = BoxFuture<Response<Self::ResponseStream>, Status>;

    fn call(&mut self, request: Request<sc::ReattachExecuteRequest>) -> Self::Future {
        let rpcs = Arc::clone(&self.0);
        Box::pin(async move { rpcs.reattach_execute(request.into_inner()).map(Response::new) })
    }
}

fn grpc<Req, Resp>() -> Grpc<ProstCodec<Resp, Req>>
where
    Req: prost::Message + Default + Send + 'static,
    Resp: prost::Message + Send + 'static,
{
    Grpc::new(ProstCodec::default())
        .max_decoding_message_size(MAX_REQUEST_BYTES)
        .max_encoding_message_size(usize::MAX)
}

/// Routes a unary RPC: `$method` of [`Rpcs`] answers the decoded request.
macro_rules! unary {
    ($rpcs:expr, $request:expr, $method:ident, $message:ty) => {{
        let rpcs = $rpcs;
        Box::pin(async move {
            let service = Unary(move |request: Request<$message>| {
                let rpcs = Arc::clone(&rpcs);
                async move { rpcs.$method(request.into_inner()).await.map(Response::new) }
            });
            Ok(grpc().unary(service, $request).await)
        })
    }};
}

impl Service<http::Request<Body>> for SparkConnectService {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        if let Err(status) = self.token.check(request.headers()) {
            return Box::pin(async move { Ok(status.into_http()) });
        }
        let rpcs = Arc::clone(&self.rpcs);
        let method = request.uri().path().rsplit('/').next().unwrap_or_default().to_owned();
        match method.as_str() {
            "ExecutePlan" => Box::pin(async move { Ok(grpc().server_streaming(ExecutePlan(rpcs), request).await) }),
            "ReattachExecute" => {
                Box::pin(async move { Ok(grpc().server_streaming(ReattachExecute(rpcs), request).await) })
            }
            "AnalyzePlan" => unary!(rpcs, request, analyze_plan, sc::AnalyzePlanRequest),
            "Config" => unary!(rpcs, request, config, sc::ConfigRequest),
            "Interrupt" => unary!(rpcs, request, interrupt, sc::InterruptRequest),
            "ReleaseExecute" => unary!(rpcs, request, release_execute, sc::ReleaseExecuteRequest),
            "ReleaseSession" => unary!(rpcs, request, release_session, sc::ReleaseSessionRequest),
            "FetchErrorDetails" => unary!(rpcs, request, fetch_error_details, sc::FetchErrorDetailsRequest),
            other => {
                let status = Status::unimplemented(format!(
                    "hearth's Spark Connect server does not implement the RPC {other} of {}",
                    Self::NAME
                ));
                Box::pin(async move { Ok(status.into_http()) })
            }
        }
    }
}
