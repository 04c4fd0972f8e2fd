//! Connections a handler can break, so that [`crate::Scripted::Drop`] closes one without an
//! answer.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// Accepts TCP connections whose stream a handler can break, so [`Scripted::Drop`] can close a
/// connection without an answer (axum offers no other way to not answer).
pub(crate) struct KillableListener(pub(crate) TcpListener);

/// The connection a request came on, handed to the handler as `ConnectInfo`.
#[derive(Clone, Debug)]
pub(crate) struct Connection {
    killed: Arc<AtomicBool>,
}

impl Connection {
    pub(crate) fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
    }
}

pub(crate) struct KillableStream {
    stream: TcpStream,
    killed: Arc<AtomicBool>,
}

impl KillableStream {
    fn check(&self) -> io::Result<()> {
        if self.killed.load(Ordering::SeqCst) {
            Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "connection dropped by a scripted answer",
            ))
        } else {
            Ok(())
        }
    }
}

impl Listener for KillableListener {
    type Io = KillableStream;
    type Addr = Connection;

    async fn accept(&mut self) -> (KillableStream, Connection) {
        loop {
            match self.0.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let killed = Arc::new(AtomicBool::new(false));
                    let connection = Connection {
                        killed: killed.clone(),
                    };
                    return (KillableStream { stream, killed }, connection);
                }
                // Out of file descriptors and the like: wait instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Connection> {
        Ok(Connection {
            killed: Arc::new(AtomicBool::new(false)),
        })
    }
}

impl Connected<IncomingStream<'_, KillableListener>> for Connection {
    fn connect_info(stream: IncomingStream<'_, KillableListener>) -> Connection {
        stream.remote_addr().clone()
    }
}

impl AsyncRead for KillableStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check()?;
        Pin::new(&mut this.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check()?;
        Pin::new(&mut this.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check()?;
        Pin::new(&mut this.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check()?;
        Pin::new(&mut this.stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
