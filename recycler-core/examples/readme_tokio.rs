//! An echo server on tokio whose buffers come from one pool with a memory
//! limit, and clients that check it. README.md shows this file in full.

use std::net::SocketAddr;
use std::sync::Arc;

use recycler_core::buffer::BufferPool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Echoes one connection until the client closes it.
async fn echo(pool: Arc<BufferPool>, mut stream: TcpStream) -> std::io::Result<()> {
    loop {
        stream.readable().await?; // an idle connection holds no memory
        let mut buf = pool
            .acquire_owned_async(4096)
            .await
            .map_err(std::io::Error::other)?;
        if stream.read_buf(&mut buf).await? == 0 {
            return Ok(()); // closed; `buf` goes back to the pool
        }
        stream.write_all(&buf).await?;
    } // each turn's buffer goes back to the pool here
}

/// Sends 100 messages and checks each echo.
async fn client(addr: SocketAddr, id: usize) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(addr).await?;
    let mut back = [0; 64];
    for i in 0..100 {
        let msg = format!("client {id}, ping {i}");
        stream.write_all(msg.as_bytes()).await?;
        stream.read_exact(&mut back[..msg.len()]).await?;
        assert_eq!(&back[..msg.len()], msg.as_bytes());
    }
    Ok(()) // `stream` is closed here
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const CLIENTS: usize = 4;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_io()
        .build()?;
    runtime.block_on(async {
        let pool = Arc::new(BufferPool::builder().memory_limit(64 << 20).build()?);
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn({
            let pool = Arc::clone(&pool);
            async move {
                let mut connections = Vec::new();
                for _ in 0..CLIENTS {
                    // (a real server would loop forever)
                    let (stream, _) = listener.accept().await?;
                    connections.push(tokio::spawn(echo(Arc::clone(&pool), stream)));
                }
                for connection in connections {
                    connection.await??;
                }
                Ok::<_, std::io::Error>(())
            }
        });
        let clients: Vec<_> = (0..CLIENTS)
            .map(|id| tokio::spawn(client(addr, id)))
            .collect();
        for c in clients {
            c.await??;
        }
        server.await??;

        let total = pool.stats().total();
        println!(
            "{} acquires, {} of them reused a buffer",
            total.acquires, total.pooled
        );
        assert!(total.acquires > 400); // a buffer per message, and one to see each close
        assert_eq!(total.in_use, 0); // every buffer came back
        assert!(total.pooled * 2 > total.acquires); // and most acquires reused one
        Ok(())
    })
}
