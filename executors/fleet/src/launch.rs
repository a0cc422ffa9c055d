//! Task launches that came through the executor's task port. Ballista 55 binds its task server to a TCP
//! address and offers no hook on it, so it listens on loopback behind the task port's front
//! ([`task_front`](super::front::task_front)), where other users of the machine can reach it too. The front
//! therefore stamps every launch it lets through with a token that lives only in this process's memory
//! ([`LaunchToken`]), and the executor builds a task's runtime — the first thing it does with a launched
//! task, before its plan is decoded — only for a launch that carries the token. A launch sent to the loopback
//! server directly is refused there and runs nothing.
//!
//! ```
//! use bytes::Bytes;
//! use hearth_fleet::launch::LaunchToken;
//!
//! let token = LaunchToken::generate();
//! // Calls other than launches pass unchanged.
//! let body = Bytes::from_static(b"\0\0\0\0\0");
//! let stamped = token.stamp("/ballista.protobuf.ExecutorGrpc/CancelTasks", body.clone(), |_, _| {});
//! assert_eq!(stamped.unwrap(), body);
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use ballista_core::RuntimeProducer;
use ballista_core::serde::protobuf::{KeyValuePair, LaunchMultiTaskParams, LaunchTaskParams};
use bytes::Bytes;
use datafusion::common::{DataFusionError, extensions_options};
use datafusion::config::ConfigExtension;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::SessionConfig;
use hearth_exec::ballista::equal_in_constant_time;
use hearth_exec::object_stores::{StoreRegistry, StoreSettings};
use prost::Message;

use crate::grpc::{framed, message};

/// The path of Ballista's call that launches tasks of one stage.
const LAUNCH_MULTI_TASK: &str = "/ballista.protobuf.ExecutorGrpc/LaunchMultiTask";
/// The path of Ballista's call that launches single tasks.
const LAUNCH_TASK: &str = "/ballista.protobuf.ExecutorGrpc/LaunchTask";

extensions_options! {
    /// The session option a launch carries its token in (`hearth_front.token`).
    pub struct FrontStamp {
        /// The token the executor's task port added.
        pub token: String, default = String::new()
    }
}

impl ConfigExtension for FrontStamp {
    const PREFIX: &'static str = "hearth_front";
}

/// The full name of the option that carries the token.
fn token_key() -> String {
    format!("{}.token", FrontStamp::PREFIX)
}

/// Why a launch could not be stamped.
#[derive(Debug, thiserror::Error)]
pub enum StampError {
    /// The body is not one uncompressed gRPC message.
    #[error("a task launch must be one uncompressed gRPC message")]
    Framing,
    /// The message is not the launch its path names.
    #[error("the task launch cannot be decoded")]
    Decode(#[from] prost::DecodeError),
}

/// The token of this executor process: random, never written anywhere or sent to anyone.
#[derive(Clone)]
pub struct LaunchToken(Arc<str>);

impl std::fmt::Debug for LaunchToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LaunchToken(…)")
    }
}

impl LaunchToken {
    /// A fresh token from the operating system's random generator.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the operating system's random generator is available");
        Self(bytes.iter().map(|b| format!("{b:02x}")).collect::<String>().into())
    }

    /// Whether a call to `path` launches tasks.
    pub fn is_launch(path: &str) -> bool {
        path == LAUNCH_MULTI_TASK || path == LAUNCH_TASK
    }

    /// `body`, the request of a call to `path`, with this token on every task it launches (replacing any
    /// token the caller put there), each task first shown to `seen` (its job's id and settings); the bodies of
    /// other calls unchanged.
    pub fn stamp(
        &self,
        path: &str,
        body: Bytes,
        mut seen: impl FnMut(&str, &[KeyValuePair]),
    ) -> Result<Bytes, StampError> {
        let mut stamp = |job: &str, props: &mut Vec<KeyValuePair>| {
            seen(job, props);
            self.stamp_props(props);
        };
        match path {
            LAUNCH_MULTI_TASK => {
                let mut launch = LaunchMultiTaskParams::decode(message(&body).ok_or(StampError::Framing)?)?;
                (launch.multi_tasks.iter_mut()).for_each(|task| stamp(&task.job_id, &mut task.props));
                Ok(framed(&launch))
            }
            LAUNCH_TASK => {
                let mut launch = LaunchTaskParams::decode(message(&body).ok_or(StampError::Framing)?)?;
                (launch.tasks.iter_mut()).for_each(|task| stamp(&task.job_id, &mut task.props));
                Ok(framed(&launch))
            }
            _ => Ok(body),
        }
    }

    fn stamp_props(&self, props: &mut Vec<KeyValuePair>) {
        let key = token_key();
        props.retain(|prop| prop.key != key);
        props.push(KeyValuePair {
            key,
            value: Some(self.0.to_string()),
        });
    }

    /// The session every task of the executor starts from: `config` with room for the token and the job's
    /// store settings.
    pub fn task_config(config: SessionConfig) -> SessionConfig {
        config
            .with_option_extension(FrontStamp::default())
            .with_option_extension(StoreSettings::default())
    }

    /// The executor's runtimes for its tasks, spilling to `work_dir` and opening the job's object stores,
    /// built only for a task whose launch carries this token; any other launch is refused before its plan is
    /// decoded. Ballista calls this for every launch as it decodes it — before its cache of a session's
    /// runtimes is consulted — so a launch in a session whose earlier tasks came through the front is
    /// checked all the same.
    pub fn runtime_producer(&self, work_dir: PathBuf) -> RuntimeProducer {
        let token = self.clone();
        Arc::new(move |config: &SessionConfig| {
            let stamp = config.options().extensions.get::<FrontStamp>();
            if !stamp.is_some_and(|stamp| equal_in_constant_time(stamp.token.as_bytes(), token.0.as_bytes())) {
                log::warn!("refused a task launch that did not come through this executor's task port");
                return Err(DataFusionError::Execution(
                    "task launches are taken only through the executor's task port, which checks the cluster \
                     secret"
                        .into(),
                ));
            }
            // The job's object stores, opened with its settings and this executor's own credentials.
            let stores = StoreRegistry::new(StoreSettings::of(config));
            Ok(Arc::new(
                RuntimeEnvBuilder::new()
                    .with_temp_file_path(&work_dir)
                    .with_object_store_registry(Arc::new(stores))
                    .build()?,
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use ballista_core::serde::protobuf::MultiTaskDefinition;

    use super::*;

    fn launch_with(props: Vec<KeyValuePair>) -> Bytes {
        framed(&LaunchMultiTaskParams {
            multi_tasks: vec![MultiTaskDefinition {
                job_id: "job".into(),
                props,
                ..MultiTaskDefinition::default()
            }],
            scheduler_endpoint: "scheduler:50050".into(),
        })
    }

    fn config_of(body: &Bytes) -> SessionConfig {
        let launch = LaunchMultiTaskParams::decode(message(body).unwrap()).unwrap();
        let mut config = LaunchToken::task_config(SessionConfig::new());
        for KeyValuePair { key, value } in &launch.multi_tasks[0].props {
            let _ = config.options_mut().set(key, value.as_deref().unwrap_or_default());
        }
        config
    }

    #[test]
    fn a_stamped_launch_gets_a_runtime_and_others_are_refused() {
        let token = LaunchToken::generate();
        let produce = token.runtime_producer(std::env::temp_dir());
        let forged = KeyValuePair {
            key: token_key(),
            value: Some("guess".into()),
        };
        let unstamped = launch_with(vec![forged]);
        assert!(produce(&config_of(&unstamped)).is_err(), "a launch without the token");
        let stamped = token.stamp(LAUNCH_MULTI_TASK, unstamped, |_, _| {}).unwrap();
        assert!(
            produce(&config_of(&stamped)).is_ok(),
            "the same launch through the front"
        );
        let other = LaunchToken::generate()
            .stamp(LAUNCH_MULTI_TASK, launch_with(vec![]), |_, _| {})
            .unwrap();
        assert!(produce(&config_of(&other)).is_err(), "another executor's token");
    }

    #[test]
    fn bodies_that_are_not_one_message_are_refused() {
        let token = LaunchToken::generate();
        for body in [&b""[..], b"\x01\0\0\0\0", b"\0\0\0\0\x09abc"] {
            let refused = token.stamp(LAUNCH_MULTI_TASK, Bytes::copy_from_slice(body), |_, _| {});
            assert!(matches!(refused, Err(StampError::Framing)), "{body:?}");
        }
    }
}
