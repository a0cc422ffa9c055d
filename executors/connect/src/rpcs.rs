//! The answers to each Spark Connect RPC, over the server's client sessions.

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures::FutureExt;
use futures::Stream;
use futures::channel::mpsc;
use futures::future::{AbortHandle, Abortable};
use spark_connect_proto as sc;
use spark_connect_proto::interrupt_request::{Interrupt, InterruptType};
use tonic::Status;

use crate::analyze::analyze;
use crate::errors::{ConnectError, Result};
use crate::execute::{Responses, execute};
use crate::sessions::{ClientSession, Sessions};

/// What a server-streaming RPC answers with.
pub(crate) type ResponseStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// How many answers an operation may have ready before the client reads them.
const RESPONSES_AHEAD: usize = 4;

/// What the server answers with.
pub(crate) struct Rpcs {
    sessions: Sessions,
}

impl Rpcs {
    pub(crate) fn new(sessions: Sessions) -> Self {
        Self { sessions }
    }

    pub(crate) fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    fn session(&self, id: &str, observed: Option<&String>) -> Result<Arc<ClientSession>, Status> {
        self.sessions
            .get(id, observed.map(String::as_str))
            .map_err(ConnectError::into_status)
    }

    /// Runs the plan in a task of its own (which `Interrupt` and a closed stream stop) and streams its answers.
    pub(crate) fn execute_plan(&self, request: sc::ExecutePlanRequest) -> ResponseStream<sc::ExecutePlanResponse> {
        let (sender, receiver) = mpsc::channel(RESPONSES_AHEAD);
        let session = match self.session(
            &request.session_id,
            request.client_observed_server_side_session_id.as_ref(),
        ) {
            Ok(session) => session,
            Err(status) => return Box::pin(futures::stream::once(async move { Err(status) })),
        };
        let operation_id = request.operation_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let mut responses = Responses::new(Arc::clone(&session), operation_id.clone(), sender.clone());
        let interrupted = Responses::new(Arc::clone(&session), operation_id.clone(), sender);
        let plan = request.plan.and_then(|p| p.op_type);
        let (abort, registration) = AbortHandle::new_pair();
        session.track(&operation_id, request.tags, abort);
        let running = Arc::clone(&session);
        let work = async move {
            let outcome = match plan {
                Some(plan) => execute(&running, plan, &mut responses).await,
                None => Err(ConnectError::InvalidPlan("ExecutePlan was sent without a plan".into())),
            };
            match outcome {
                Ok(()) => {
                    let _ = responses.complete().await;
                }
                Err(error) => responses.fail(error).await,
            }
        };
        // A panic in the work ends the operation with an error, not a stream the client would reattach to.
        let work = AssertUnwindSafe(work).catch_unwind();
        tokio::spawn(async move {
            match Abortable::new(work, registration).await {
                Err(_) => interrupted.fail(ConnectError::Cancelled).await,
                Ok(Err(panic)) => {
                    let error = ConnectError::Execution(panic_message(panic.as_ref()));
                    interrupted.fail(error).await;
                }
                Ok(Ok(())) => {}
            }
            session.finished(&operation_id);
        });
        Box::pin(receiver)
    }

    /// Every operation's answers end with `result_complete`, so there is nothing to reattach to.
    pub(crate) fn reattach_execute(
        &self,
        request: sc::ReattachExecuteRequest,
    ) -> Result<ResponseStream<sc::ExecutePlanResponse>, Status> {
        Err(ConnectError::Handle {
            error_class: "INVALID_HANDLE.OPERATION_NOT_FOUND",
            message: format!(
                "The handle {} is invalid: the operation was not found.",
                request.operation_id
            ),
        }
        .into_status())
    }

    pub(crate) async fn analyze_plan(
        &self,
        request: sc::AnalyzePlanRequest,
    ) -> Result<sc::AnalyzePlanResponse, Status> {
        let session = self.session(
            &request.session_id,
            request.client_observed_server_side_session_id.as_ref(),
        )?;
        let kind = request
            .analyze
            .ok_or_else(|| ConnectError::InvalidPlan("AnalyzePlan without a question".into()).into_status())?;
        let result = analyze(&session, kind).await.map_err(ConnectError::into_status)?;
        Ok(sc::AnalyzePlanResponse {
            session_id: session.client_id.clone(),
            server_side_session_id: session.server_id.clone(),
            result: Some(result),
        })
    }

    pub(crate) async fn config(&self, request: sc::ConfigRequest) -> Result<sc::ConfigResponse, Status> {
        let session = self.session(
            &request.session_id,
            request.client_observed_server_side_session_id.as_ref(),
        )?;
        let operation = (request.operation.and_then(|o| o.op_type))
            .ok_or_else(|| ConnectError::InvalidPlan("Config without an operation".into()).into_status())?;
        let pairs = session.config().apply(operation).map_err(ConnectError::into_status)?;
        Ok(sc::ConfigResponse {
            session_id: session.client_id.clone(),
            server_side_session_id: session.server_id.clone(),
            pairs,
            warnings: Vec::new(),
        })
    }

    pub(crate) async fn interrupt(&self, request: sc::InterruptRequest) -> Result<sc::InterruptResponse, Status> {
        let session = self.session(
            &request.session_id,
            request.client_observed_server_side_session_id.as_ref(),
        )?;
        let interrupted_ids = match (InterruptType::try_from(request.interrupt_type), request.interrupt) {
            (Ok(InterruptType::All), _) => session.interrupt(|_, _| true),
            (Ok(InterruptType::Tag), Some(Interrupt::OperationTag(tag))) => {
                session.interrupt(|_, tags| tags.contains(&tag))
            }
            (Ok(InterruptType::OperationId), Some(Interrupt::OperationId(id))) => session.interrupt(|op, _| op == id),
            _ => {
                return Err(ConnectError::InvalidPlan("Interrupt without what to interrupt".into()).into_status());
            }
        };
        Ok(sc::InterruptResponse {
            session_id: session.client_id.clone(),
            server_side_session_id: session.server_id.clone(),
            interrupted_ids,
        })
    }

    /// Answers are not kept for reattaching, so releasing them is only acknowledged.
    pub(crate) async fn release_execute(
        &self,
        request: sc::ReleaseExecuteRequest,
    ) -> Result<sc::ReleaseExecuteResponse, Status> {
        let session = self.session(
            &request.session_id,
            request.client_observed_server_side_session_id.as_ref(),
        )?;
        Ok(sc::ReleaseExecuteResponse {
            session_id: session.client_id.clone(),
            server_side_session_id: session.server_id.clone(),
            operation_id: Some(request.operation_id),
        })
    }

    pub(crate) async fn release_session(
        &self,
        request: sc::ReleaseSessionRequest,
    ) -> Result<sc::ReleaseSessionResponse, Status> {
        let server_side_session_id = self.sessions.release(&request.session_id).unwrap_or_default();
        Ok(sc::ReleaseSessionResponse {
            session_id: request.session_id,
            server_side_session_id,
        })
    }

    /// Errors are sent whole in their status, with no id to fetch more by: nothing more to give.
    pub(crate) async fn fetch_error_details(
        &self,
        request: sc::FetchErrorDetailsRequest,
    ) -> Result<sc::FetchErrorDetailsResponse, Status> {
        let session = self.session(
            &request.session_id,
            request.client_observed_server_side_session_id.as_ref(),
        )?;
        Ok(sc::FetchErrorDetailsResponse {
            session_id: session.client_id.clone(),
            server_side_session_id: session.server_id.clone(),
            root_error_idx: None,
            errors: Vec::new(),
        })
    }
}

/// What a panicked operation says to its client.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let what = (panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned());
    format!("hearth's server failed while running this operation ({what}); the server goes on serving")
}
