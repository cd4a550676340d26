//! The load: closed-loop connections on 127.0.0.1, each sending a request,
//! reading the whole response, checking it, and sending the next, until the
//! run is told to stop or the connection has made its share of the
//! requests.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::hist::Histogram;
use crate::serve::{MAX_FRAME, payload_byte, request};

/// Connections are connecting and warming up: nothing is counted.
pub(crate) const WARMUP: u8 = 0;
/// Responses that arrive now are counted.
pub(crate) const MEASURE: u8 = 1;
/// Connections finish their request and close.
pub(crate) const STOP: u8 = 2;

/// What one connection measured.
#[derive(Debug)]
pub(crate) struct Measured {
    /// Latencies of the responses that arrived while measuring.
    pub(crate) latencies: Histogram,
    /// Requests made in all.
    pub(crate) requests: u64,
}

/// One connection: requests of `req` bytes for responses of `resp` bytes
/// (both frames, headers included), at most `max` of them, while `phase`
/// is not [`STOP`]. Allocates its buffers before the first request and
/// nothing per request.
pub(crate) async fn connection(
    addr: SocketAddr,
    req: usize,
    resp: usize,
    max: u64,
    phase: Arc<AtomicU8>,
) -> io::Result<Measured> {
    assert!((4..=MAX_FRAME).contains(&resp));
    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let frame = request(req, resp);
    let mut body = vec![0; resp - 4];
    let mut latencies = Histogram::new();
    let mut requests = 0;
    while requests < max && phase.load(Relaxed) != STOP {
        let start = Instant::now();
        stream.write_all(&frame).await?;
        let mut header = [0; 4];
        stream.read_exact(&mut header).await?;
        let len = u32::from_le_bytes(header) as usize;
        if len != body.len() {
            return Err(io::Error::other(format!(
                "a response of {len} bytes, not {}",
                body.len()
            )));
        }
        stream.read_exact(&mut body).await?;
        let latency = start.elapsed();
        let last = body.len().saturating_sub(1);
        if body.first().is_some_and(|&b| b != payload_byte(0))
            || body.last().is_some_and(|&b| b != payload_byte(last))
        {
            return Err(io::Error::other("a response with the wrong bytes"));
        }
        requests += 1;
        if phase.load(Relaxed) == MEASURE {
            latencies.record(latency);
        }
    }
    Ok(Measured {
        latencies,
        requests,
    })
}
