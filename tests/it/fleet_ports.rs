//! An executor's ports let in only callers that present the cluster secret. A caller without it is refused
//! on the Flight port and the task port alike — `StopExecutor` and `LaunchMultiTask` answered UNAUTHENTICATED,
//! the executor alive — and a launch sent around the task port's front, straight to Ballista's task server
//! on loopback, runs nothing — in a new session or in one whose tasks the executor ran — and its
//! `RemoveJobData` cannot reach the shipped programs' folder; the same launch through the front with the secret
//! runs (the plan writes a file). A token is admitted for its service, on one connection, until it
//! expires; a channel's token on each of its connections.

use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arrow_flight::Ticket;
use arrow_flight::flight_service_client::FlightServiceClient;
use ballista_core::JobId;
use ballista_core::execution_plans::ShuffleWriterExec;
use ballista_core::serde::protobuf::executor_grpc_client::ExecutorGrpcClient;
use ballista_core::serde::protobuf::{
    Action, CancelTasksParams, FetchPartition, LaunchMultiTaskParams, MultiTaskDefinition, RemoveJobDataParams,
    StopExecutorParams, TaskId, action,
};
use datafusion::prelude::SessionContext;
use datafusion_proto::physical_plan::AsExecutionPlan;
use datafusion_proto::protobuf::PhysicalPlanNode;
use hearth::exec::ballista::{ClusterSecret, Service};
use hearth::exec::codec::HearthPhysicalCodec;
use hearth::exec::extension::Extensions;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::Code;
use tonic::transport::{Channel, Endpoint};

use crate::fleet::spawn_until;

/// The test fleet's secret.
const SECRET: &str = "0123456789abcdef0123456789abcdefsecret";

/// A scheduler and one executor sharing [`SECRET`]; killed when dropped.
struct GuardedFleet {
    processes: Vec<Child>,
    scheduler: String,
    executor_id: String,
    flight_port: u16,
    task_port: u16,
}

impl GuardedFleet {
    fn start(work: &Path) -> Self {
        let env = [("HEARTH_SECRET", SECRET)];
        let work = work.to_str().unwrap();
        let (scheduler, line) = spawn_until(
            &["scheduler", "--bind", "127.0.0.1:0", "--work-dir", work],
            &env,
            "hearth scheduler listening on",
        );
        let address = line.rsplit(' ').next().unwrap().to_string();
        let (executor, line) = spawn_until(
            &[
                "executor",
                "--scheduler",
                &address,
                "--slots",
                "1",
                "--work-dir",
                &format!("{work}/executor"),
                "--run-shipped-programs",
            ],
            &env,
            "hearth executor",
        );
        // hearth executor ID with 1 slots and 0 GPUs on 127.0.0.1:FLIGHT (tasks on TASKS), scheduler …
        let words: Vec<&str> = line.split_whitespace().collect();
        let flight = words[10].rsplit(':').next().unwrap().parse().unwrap();
        let tasks = words[13].trim_end_matches("),").parse().unwrap();
        GuardedFleet {
            processes: vec![scheduler, executor],
            scheduler: address,
            executor_id: words[2].to_string(),
            flight_port: flight,
            task_port: tasks,
        }
    }

    fn executor_alive(&mut self) -> bool {
        self.processes[1].try_wait().unwrap().is_none()
    }
}

impl Drop for GuardedFleet {
    fn drop(&mut self) {
        for process in &mut self.processes {
            let _ = process.kill();
            let _ = process.wait();
        }
    }
}

/// A client of the executor's task service at `host:port`, presenting `secret` when given.
async fn client(host: &str, port: u16, secret: Option<&str>) -> ExecutorGrpcClient<Channel> {
    let endpoint = Endpoint::from_shared(format!("http://{host}:{port}")).unwrap();
    let endpoint = match secret {
        Some(secret) => {
            let token = ClusterSecret::parse(secret)
                .unwrap()
                .channel_token(&format!("{host}:{port}"));
            endpoint.user_agent(token).unwrap()
        }
        None => endpoint,
    };
    let channel = tokio::time::timeout(Duration::from_secs(10), endpoint.connect()).await;
    ExecutorGrpcClient::new(channel.expect("connects within 10 s").unwrap())
}

/// A client of the executor's task service at `address` presenting `token` in its user agent.
async fn client_with(address: &str, token: &str) -> ExecutorGrpcClient<Channel> {
    let endpoint = Endpoint::from_shared(format!("http://{address}")).unwrap();
    let channel = tokio::time::timeout(Duration::from_secs(10), endpoint.user_agent(token).unwrap().connect()).await;
    ExecutorGrpcClient::new(channel.expect("connects within 10 s").unwrap())
}

/// The statuses and bodies of `requests` GETs of the scheduler's `/hearth/executors` at `address`, made one
/// after the other on one connection with `token` as the bearer.
async fn rest_answers(address: &str, token: &str, requests: usize) -> String {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    for n in 1..=requests {
        let close = if n == requests { "close" } else { "keep-alive" };
        let request = format!(
            "GET /hearth/executors HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nConnection: {close}\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
    }
    let mut answers = String::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut answers)).await;
    read.expect("answered within 10 s").unwrap();
    answers
}

/// The HTTP statuses in `answers`, in order.
fn statuses(answers: &str) -> Vec<&str> {
    (answers.split("HTTP/1.1 ").skip(1))
        .map(|answer| answer.split(' ').next().unwrap())
        .collect()
}

/// A launch of one task whose plan writes `mark` as CSV, reporting to `scheduler`.
async fn launch_writing(mark: &Path, job: &str, scheduler: &str) -> LaunchMultiTaskParams {
    let ctx = SessionContext::new();
    let copy = format!("COPY (SELECT 1 AS x) TO '{}' STORED AS CSV", mark.display());
    let plan = ctx.sql(&copy).await.unwrap().create_physical_plan().await.unwrap();
    let stage = ShuffleWriterExec::try_new(JobId::new(job), 1, plan, "unused".into()).unwrap();
    let node =
        PhysicalPlanNode::try_from_physical_plan(Arc::new(stage), &HearthPhysicalCodec::new(&Extensions::default()))
            .unwrap();
    LaunchMultiTaskParams {
        multi_tasks: vec![MultiTaskDefinition {
            task_ids: vec![TaskId::default()],
            job_id: job.to_string(),
            stage_id: 1,
            plan: node.encode_to_vec(),
            session_id: format!("{job}-session"),
            ..MultiTaskDefinition::default()
        }],
        scheduler_endpoint: scheduler.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn executor_ports_refuse_callers_without_the_secret_and_launches_around_the_front_run_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut fleet = GuardedFleet::start(dir.path());
    let (flight, tasks) = (fleet.flight_port, fleet.task_port);
    let stop = StopExecutorParams {
        executor_id: fleet.executor_id.clone(),
        reason: "an intruder".into(),
        force: true,
    };
    let outside = dir.path().join("outside.csv");

    // Without the secret: both ports refuse both calls before Ballista sees them.
    for port in [flight, tasks] {
        let mut intruder = client("127.0.0.1", port, None).await;
        let stopped = intruder.stop_executor(stop.clone()).await.unwrap_err();
        assert_eq!(
            stopped.code(),
            Code::Unauthenticated,
            "StopExecutor on port {port}: {stopped}"
        );
        let launch = launch_writing(&outside, "intruder", &fleet.scheduler).await;
        let launched = intruder.launch_multi_task(launch).await.unwrap_err();
        assert_eq!(
            launched.code(),
            Code::Unauthenticated,
            "LaunchMultiTask on port {port}: {launched}"
        );
    }

    // Around the front: Ballista's task server on loopback takes the call, and refuses to run it.
    let inner_host = hearth_fleet::front::inner_host("127.0.0.1".parse().unwrap()).unwrap();
    let mut around = client(&inner_host.to_string(), tasks, None).await;
    let around_mark = dir.path().join("around.csv");
    let launch = launch_writing(&around_mark, "around", &fleet.scheduler).await;
    let answer = around.launch_multi_task(launch).await.unwrap().into_inner();
    assert_eq!(answer.failed_jobs, ["around"], "a launch around the front is refused");

    // Around the front, RemoveJobData cannot reach the shipped programs kept beside the work directory.
    let programs = dir.path().join("executor.programs");
    assert!(
        programs.is_dir(),
        "the executor keeps shipped programs in {}",
        programs.display()
    );
    for job in ["programs", "../executor.programs", programs.to_str().unwrap()] {
        let remove = RemoveJobDataParams {
            job_id: job.to_string(),
            ..RemoveJobDataParams::default()
        };
        let _ = around.remove_job_data(remove).await;
        assert!(
            programs.is_dir(),
            "RemoveJobData({job:?}) around the front left the programs' folder"
        );
    }

    // Through the front with the secret, the same launch runs: the plan writes its file.
    let mut member = client("127.0.0.1", tasks, Some(SECRET)).await;
    let through_mark = dir.path().join("through.csv");
    let launch = launch_writing(&through_mark, "through", &fleet.scheduler).await;
    let answer = member.launch_multi_task(launch).await.unwrap().into_inner();
    assert!(
        answer.failed_jobs.is_empty(),
        "a launch through the front with the secret is taken: {answer:?}"
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !through_mark.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the launched task wrote nothing in 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    member.cancel_tasks(CancelTasksParams::default()).await.unwrap();

    // Around the front again, in the session the executor now knows: refused all the same (every launch is
    // checked when its plan is decoded, before any runtime a session's earlier tasks left is reused).
    let again_mark = dir.path().join("around-again.csv");
    let launch = launch_writing(&again_mark, "through", &fleet.scheduler).await;
    let answer = around.launch_multi_task(launch).await.unwrap().into_inner();
    assert_eq!(
        answer.failed_jobs,
        ["through"],
        "a launch around the front in a known session is refused"
    );

    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !outside.exists() && !around_mark.exists() && !again_mark.exists(),
        "no task ran without the secret"
    );
    assert!(fleet.executor_alive(), "the executor still runs");

    // Ballista builds a fetched partition's path from its job id: one that is a path, even with the secret, is
    // refused before Ballista reads anything; a job id of Ballista's shape reaches Ballista.
    let fetch = |job: &str| Ticket {
        ticket: Action {
            action_type: Some(action::ActionType::FetchPartition(FetchPartition {
                job_id: job.to_string(),
                stage_id: 1,
                host: "127.0.0.1".into(),
                port: u32::from(flight),
                ..FetchPartition::default()
            })),
            settings: Vec::new(),
        }
        .encode_to_vec()
        .into(),
    };
    let token = ClusterSecret::parse(SECRET)
        .unwrap()
        .channel_token(&format!("127.0.0.1:{flight}"));
    let endpoint = Endpoint::from_shared(format!("http://127.0.0.1:{flight}")).unwrap();
    let channel = tokio::time::timeout(Duration::from_secs(10), endpoint.user_agent(token).unwrap().connect()).await;
    let mut member = FlightServiceClient::new(channel.expect("connects within 10 s").unwrap());
    let escaping = member.do_get(fetch("../outside")).await.unwrap_err();
    assert_eq!(escaping.code(), Code::PermissionDenied, "{escaping}");
    assert!(escaping.message().contains("not a Ballista job id"), "{escaping}");
    let shaped = member.do_get(fetch("0gkj6x1fbrkg0")).await.map(|_| ()).unwrap_err();
    assert_ne!(
        shaped.code(),
        Code::PermissionDenied,
        "a job id of Ballista's shape: {shaped}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_admitted_for_its_service_on_one_connection_until_it_expires() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = GuardedFleet::start(dir.path());
    let secret = ClusterSecret::parse(SECRET).unwrap();
    let scheduler = fleet.scheduler.as_str();
    let minute = Duration::from_secs(60);

    // REST: a token for the API, twice on its connection; a copy on another connection is refused.
    let api = secret.token(scheduler, Service::Api, minute);
    let answers = rest_answers(scheduler, &api, 2).await;
    assert_eq!(statuses(&answers), ["200", "200"], "{answers}");
    let replayed = rest_answers(scheduler, &api, 1).await;
    assert_eq!(statuses(&replayed), ["401"], "{replayed}");
    assert!(replayed.contains("used before, on another connection"), "{replayed}");
    let expired = (secret.tokens_for(scheduler)).token_until(Service::Api, SystemTime::now() - 2 * minute);
    let expired = rest_answers(scheduler, &expired, 1).await;
    assert!(
        expired.contains("401") && expired.contains("expired 120 s ago"),
        "{expired}"
    );
    for other in [
        secret.token(scheduler, Service::Grpc, minute),
        secret.channel_token(scheduler),
    ] {
        let answer = rest_answers(scheduler, &other, 1).await;
        assert!(
            answer.contains("401") && answer.contains("for the grpc service, not api"),
            "{answer}"
        );
    }

    // gRPC on the executor's task port: a channel's token on each of its connections (once the front reaches
    // Ballista's task server, which starts beside it), the same rules as REST's for a gRPC token.
    let tasks = format!("127.0.0.1:{}", fleet.task_port);
    let cancel = || CancelTasksParams::default();
    let channel = secret.channel_token(&tasks);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match client_with(&tasks, &channel).await.cancel_tasks(cancel()).await {
            Err(status) if status.code() == Code::Unavailable && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            answer => break assert!(answer.is_ok(), "a channel's token: {answer:?}"),
        }
    }
    let again = client_with(&tasks, &channel).await.cancel_tasks(cancel()).await;
    assert!(again.is_ok(), "a channel's token on another connection: {again:?}");
    let grpc = secret.token(&tasks, Service::Grpc, minute);
    client_with(&tasks, &grpc).await.cancel_tasks(cancel()).await.unwrap();
    let replayed = client_with(&tasks, &grpc)
        .await
        .cancel_tasks(cancel())
        .await
        .unwrap_err();
    assert_eq!(replayed.code(), Code::Unauthenticated, "{replayed}");
    assert!(replayed.message().contains("used before"), "{replayed}");
    let for_api = secret.token(&tasks, Service::Api, minute);
    let refused = client_with(&tasks, &for_api)
        .await
        .cancel_tasks(cancel())
        .await
        .unwrap_err();
    assert!(refused.message().contains("for the api service, not grpc"), "{refused}");
}
