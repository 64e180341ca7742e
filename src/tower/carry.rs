//! [`CarryPermit`]: how a classified response reaches the caller,
//! unchanged or with a body that holds its call's permit (a
//! [`PendingPermit`]) until the end of the body decides.

use super::classify::NeverClassifyEos;
use super::pending::PendingPermit;

mod sealed {
    /// Only this crate says how a response carries a permit.
    pub trait Sealed<E> {}
}

/// How a response reaches the caller once its classifier has answered:
/// unchanged when the classifier decides on the response (its
/// `ClassifyEos` is [`NeverClassifyEos`]: every type, as it is), or with a
/// body that holds the call's permit until its end when the classifier
/// waits for the trailers (`http::Response<B>` becomes
/// `http::Response<ClassifiedBody<B, E>>`, feature `tonic`).
///
/// The crate implements it (it is sealed); it appears in the bounds of
/// [`FuseService`](super::FuseService), whose response type is
/// `<Res as CarryPermit<C::ClassifyEos>>::Response`.
///
/// ```
/// use fuse_breaker::tower::{CarryPermit, NeverClassifyEos};
///
/// // A classifier that decides on the response leaves it as it is.
/// fn unchanged<R: CarryPermit<NeverClassifyEos, Response = R>>(response: R) -> R {
///     response.ready()
/// }
/// assert_eq!(unchanged(42), 42);
/// ```
pub trait CarryPermit<E>: Sized + sealed::Sealed<E> {
    /// What the caller receives.
    type Response;

    /// The response of a call whose permit is already ended.
    fn ready(self) -> Self::Response;

    /// The response of a call whose permit `permit` waits for `eos` to
    /// judge the end of the body.
    fn carry(self, eos: E, permit: PendingPermit) -> Self::Response;
}

impl<Res> sealed::Sealed<NeverClassifyEos> for Res {}

impl<Res> CarryPermit<NeverClassifyEos> for Res {
    type Response = Res;

    #[inline]
    fn ready(self) -> Res {
        self
    }

    fn carry(self, eos: NeverClassifyEos, _permit: PendingPermit) -> Res {
        match eos {}
    }
}

#[cfg(feature = "tonic")]
impl<B, E> sealed::Sealed<E> for http::Response<B>
where
    B: http_body::Body,
    E: super::eos::ClassifyEos,
{
}

#[cfg(feature = "tonic")]
impl<B, E> CarryPermit<E> for http::Response<B>
where
    B: http_body::Body,
    E: super::eos::ClassifyEos,
{
    type Response = http::Response<super::eos::ClassifiedBody<B, E>>;

    #[inline]
    fn ready(self) -> Self::Response {
        self.map(super::eos::ClassifiedBody::decided)
    }

    #[inline]
    fn carry(self, eos: E, permit: PendingPermit) -> Self::Response {
        self.map(|body| super::eos::ClassifiedBody::waiting(body, eos, permit))
    }
}
