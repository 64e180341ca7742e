//! tonic's own client (`tonic::client::Grpc`) over the layer, with a
//! codec of raw bytes and a service that frames gRPC answers by hand.

use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::{Buf, BufMut, Bytes};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

use super::*;

#[derive(Clone, Copy, Default)]
struct Raw;

impl Encoder for Raw {
    type Item = Bytes;
    type Error = Status;
    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Bytes;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

impl Codec for Raw {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

/// A unary answer: one framed message, then `grpc-status: code`.
fn answer(code: Code) -> Response<http_body_util::combinators::UnsyncBoxBody<Bytes, Infallible>> {
    let mut frame = vec![0u8];
    frame.extend_from_slice(&4u32.to_be_bytes());
    frame.extend_from_slice(b"pong");
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", (code as i32).into());
    let body = Full::new(Bytes::from(frame)).with_trailers(async move { Some(Ok(trailers)) });
    Response::builder()
        .header("content-type", "application/grpc")
        .body(body.boxed_unsync())
        .unwrap()
}

fn call<S>(grpc: &mut tonic::client::Grpc<S>) -> Result<Bytes, Status>
where
    S: tonic::client::GrpcService<tonic::body::Body>,
    S::ResponseBody: http_body::Body<Data = Bytes> + Send + 'static,
    <S::ResponseBody as http_body::Body>::Error: Into<BoxError> + Send,
{
    let path = http::uri::PathAndQuery::from_static("/ledger.Ledger/Post");
    run(async {
        grpc.ready()
            .await
            .map_err(|e| Status::from_error(e.into()))?;
        grpc.unary(tonic::Request::new(Bytes::from_static(b"ping")), path, Raw)
            .await
            .map(tonic::Response::into_inner)
    })
}

#[test]
fn statuses_in_trailers_and_rejections_reach_the_client() {
    let (fuse, _mock) = circuit(1);
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let code = Arc::new(std::sync::Mutex::new(Code::Ok));
    let answering = code.clone();
    let svc = FuseLayer::new(fuse.clone())
        .classifier(GrpcClassifier::new())
        .layer(service_fn(move |_req: Request<tonic::body::Body>| {
            seen.fetch_add(1, Ordering::SeqCst);
            let code = *answering.lock().unwrap();
            async move { Ok::<_, Infallible>(answer(code)) }
        }));
    let mut grpc = tonic::client::Grpc::new(svc);

    assert_eq!(call(&mut grpc).unwrap(), "pong");
    assert_eq!(fuse.state(), State::Closed);

    *code.lock().unwrap() = Code::Unavailable;
    let status = call(&mut grpc).unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(fuse.state(), State::Open, "the trailers opened the circuit");
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    let status = call(&mut grpc).unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    assert!(status.metadata().get(RETRY_PUSHBACK_MS).is_some());
    let open = status.source().and_then(|s| s.downcast_ref::<OpenError>());
    assert_eq!(open.map(OpenError::key), Some("fuse:ledger"));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "nothing sent while open");
}
