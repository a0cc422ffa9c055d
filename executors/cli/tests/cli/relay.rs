//! A TCP relay that records every byte it passes, both ways: what a listener on the network between a
//! client and a server would capture.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A relay on 127.0.0.1 to one server; it stops accepting when dropped.
pub struct RecordingRelay {
    /// Where clients reach it, `127.0.0.1:PORT`.
    pub address: String,
    captured: Arc<Mutex<Vec<u8>>>,
    stopped: Arc<AtomicBool>,
}

impl RecordingRelay {
    /// A relay to `server` (`host:port`).
    pub fn start(server: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let captured = Arc::new(Mutex::new(Vec::new()));
        let stopped = Arc::new(AtomicBool::new(false));
        let (server, record, stop) = (server.to_string(), Arc::clone(&captured), Arc::clone(&stopped));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let Ok(upstream) = TcpStream::connect(&server) else {
                            continue;
                        };
                        client.set_nonblocking(false).unwrap();
                        pass(&client, &upstream, &record);
                        pass(&upstream, &client, &record);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Self {
            address,
            captured,
            stopped,
        }
    }

    /// Everything it has passed so far, both directions interleaved.
    pub fn captured(&self) -> Vec<u8> {
        self.captured.lock().unwrap().clone()
    }
}

impl Drop for RecordingRelay {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

/// Copies `from` to `to` on a thread of its own, recording each chunk, until `from` closes.
fn pass(from: &TcpStream, to: &TcpStream, record: &Arc<Mutex<Vec<u8>>>) {
    let (mut from, mut to, record) = (from.try_clone().unwrap(), to.try_clone().unwrap(), Arc::clone(record));
    std::thread::spawn(move || {
        let mut buffer = [0u8; 16 * 1024];
        while let Ok(read) = from.read(&mut buffer) {
            if read == 0 || to.write_all(&buffer[..read]).is_err() {
                break;
            }
            record.lock().unwrap().extend_from_slice(&buffer[..read]);
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
