//! Who may scrape `/metrics`, as controller-runtime's `filters.WithAuthenticationAndAuthorization`
//! decides it: the request's bearer token is authenticated with a TokenReview, and the user it
//! names is authorized with a SubjectAccessReview (the request's verb, `get`, on the
//! non-resource URL `/metrics`), both through the manager's own client. No token or a token
//! the API server does not accept: 401; a user without the `metrics-reader` ClusterRole: 403.
//!
//! Decisions are cached per token for a minute (a denial for 10 s), so Prometheus scraping
//! every 15 s costs the API server two requests a minute at most. Reviews go out a few at a
//! time, each request waiting its turn: see `REVIEWS_AT_ONCE`.

mod cache;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authentication::v1 as authnv1;
use k8s_openapi::api::authorization::v1 as authzv1;
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::sync::Semaphore;

use cache::{Cache, Key};

/// How long an allowed token is trusted without asking the API server again.
pub const ALLOWED_TTL: Duration = Duration::from_secs(60);
/// How long a refused token is refused without asking again.
pub const DENIED_TTL: Duration = Duration::from_secs(10);
/// The longest token reviewed. ServiceAccount tokens are 1-2 KB and OIDC tokens a few KB;
/// a longer one is refused at once, so that made-up tokens as long as a header can be (hyper
/// reads about 400 KB of them) are not sent to the API server.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Requests reviewed at once. A token not in the cache costs two reviews, so made-up tokens
/// sent by the thousand would make the manager flood the API server, where API Priority and
/// Fairness queues all of the manager's requests as one flow: its controllers would wait
/// behind the reviews. Requests wait their turn in order, as many as the server has
/// connections (`server::connections::METRICS`), so Prometheus waits behind at most those.
pub const REVIEWS_AT_ONCE: usize = 4;
/// The longest a request waits for its turn and its reviews: Prometheus' scrape timeout.
/// The client's read timeout (300 s, sized for watches) is far longer, and a review the API
/// server never answers must not keep its turn that long.
pub const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    /// The API server does not accept the token: 401.
    Unauthenticated,
    /// The user may not `get` the path: 403.
    Forbidden,
}

impl Decision {
    fn ttl(self) -> Duration {
        match self {
            Decision::Allowed => ALLOWED_TTL,
            Decision::Unauthenticated | Decision::Forbidden => DENIED_TTL,
        }
    }
}

/// Reviews scrapes with the API server; cheap to clone (the cache is shared).
#[derive(Clone)]
pub struct Authorizer {
    client: Client,
    cache: Arc<Mutex<Cache>>,
    turns: Arc<Semaphore>,
}

impl Authorizer {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            cache: Arc::default(),
            turns: Arc::new(Semaphore::new(REVIEWS_AT_ONCE)),
        }
    }

    /// Whether `token` may `verb` the non-resource URL `path`.
    pub async fn decide(&self, token: &str, verb: &str, path: &str) -> kube::Result<Decision> {
        let key = Key::of(verb, path, token);
        if let Some(decision) = self.cached(&key) {
            return Ok(decision);
        }
        let reviewed = async {
            let _turn = self
                .turns
                .acquire()
                .await
                .expect("the semaphore is never closed");
            // The same token may have been reviewed for another request in the meantime.
            if let Some(decision) = self.cached(&key) {
                return Ok(decision);
            }
            let decision = self.review(token, verb, path).await?;
            self.cache
                .lock()
                .unwrap()
                .insert(key, decision, Instant::now());
            Ok(decision)
        };
        tokio::time::timeout(REVIEW_TIMEOUT, reviewed)
            .await
            .unwrap_or_else(|elapsed| Err(kube::Error::Service(elapsed.into())))
    }

    fn cached(&self, key: &Key) -> Option<Decision> {
        self.cache.lock().unwrap().get(key, Instant::now())
    }

    async fn review(&self, token: &str, verb: &str, path: &str) -> kube::Result<Decision> {
        let params = PostParams::default();
        let review = authnv1::TokenReview {
            spec: authnv1::TokenReviewSpec {
                token: token.to_string(),
                ..Default::default()
            },
            ..Default::default()
        };
        let reviewed = Api::<authnv1::TokenReview>::all(self.client.clone())
            .create(&params, &review)
            .await?;
        let status = reviewed.status.unwrap_or_default();
        if status.authenticated != Some(true) {
            return Ok(Decision::Unauthenticated);
        }
        let user = status.user.unwrap_or_default();
        let access = authzv1::SubjectAccessReview {
            spec: authzv1::SubjectAccessReviewSpec {
                user: user.username,
                groups: user.groups,
                uid: user.uid,
                extra: user.extra,
                non_resource_attributes: Some(authzv1::NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some(verb.to_string()),
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let answered = Api::<authzv1::SubjectAccessReview>::all(self.client.clone())
            .create(&params, &access)
            .await?;
        Ok(match answered.status {
            Some(status) if status.allowed => Decision::Allowed,
            _ => Decision::Forbidden,
        })
    }
}

/// The token of an `Authorization: Bearer <token>` header, when it is not too long to be one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    let plausible = !token.is_empty() && token.len() <= MAX_TOKEN_BYTES;
    (scheme.eq_ignore_ascii_case("bearer") && plausible).then_some(token)
}

/// axum middleware: passes on only requests whose token may read the path.
pub async fn require(State(auth): State<Authorizer>, request: Request, next: Next) -> Response {
    let Some(token) = bearer(request.headers()) else {
        return (StatusCode::UNAUTHORIZED, "Unauthorized\n").into_response();
    };
    let verb = request.method().as_str().to_ascii_lowercase();
    match auth.decide(token, &verb, request.uri().path()).await {
        Ok(Decision::Allowed) => next.run(request).await,
        Ok(Decision::Unauthenticated) => {
            (StatusCode::UNAUTHORIZED, "Unauthorized\n").into_response()
        }
        Ok(Decision::Forbidden) => (StatusCode::FORBIDDEN, "Forbidden\n").into_response(),
        Err(err) => {
            if matches!(&err, kube::Error::Api(status) if status.code == 403) {
                // The ClusterRole metrics-auth-role lets the manager create both reviews.
                tracing::warn!(%err, "reviewing a metrics request: is metrics-auth-role bound to the manager?");
            } else {
                tracing::warn!(%err, "reviewing a metrics request");
            }
            (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error\n").into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::test_support::{Reply, mock_client, serve};
    use serde_json::json;

    const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
    const ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

    fn token_review(authenticated: bool) -> Reply {
        Reply::Json(
            201,
            json!({
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {},
                "status": {"authenticated": authenticated, "user": {
                    "username": "system:serviceaccount:monitoring:prometheus",
                    "uid": "u-1", "groups": ["system:serviceaccounts"],
                }},
            }),
        )
    }

    fn access_review(allowed: bool) -> Reply {
        Reply::Json(
            201,
            json!({
                "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {}, "status": {"allowed": allowed},
            }),
        )
    }

    /// Asks `decide` for each token in turn; the API server sees exactly `expected`.
    async fn decisions(
        tokens: &[&str],
        expected: Vec<crate::controller::test_support::Expected>,
    ) -> (Vec<Decision>, Vec<crate::controller::test_support::Seen>) {
        let (client, server) = mock_client();
        let seen = tokio::spawn(serve(server, expected));
        let auth = Authorizer::new(client);
        let mut decided = Vec::new();
        for token in tokens {
            decided.push(auth.decide(token, "get", "/metrics").await.unwrap());
        }
        drop(auth);
        (decided, seen.await.unwrap())
    }

    #[tokio::test]
    async fn an_allowed_token_is_reviewed_once_then_cached() {
        let expected = vec![
            ("POST", TOKEN_REVIEWS.into(), token_review(true)),
            ("POST", ACCESS_REVIEWS.into(), access_review(true)),
        ];
        let (decided, seen) = decisions(&["t1", "t1", "t1"], expected).await;
        assert_eq!(decided, [Decision::Allowed; 3]);
        assert_eq!(seen[0].body["spec"]["token"], "t1");
        let spec = &seen[1].body["spec"];
        assert_eq!(spec["user"], "system:serviceaccount:monitoring:prometheus");
        assert_eq!(spec["uid"], "u-1");
        assert_eq!(spec["groups"], json!(["system:serviceaccounts"]));
        assert_eq!(
            spec["nonResourceAttributes"],
            json!({"path": "/metrics", "verb": "get"})
        );
    }

    #[tokio::test]
    async fn an_unknown_token_is_unauthenticated_without_an_access_review() {
        let expected = vec![("POST", TOKEN_REVIEWS.into(), token_review(false))];
        let (decided, _) = decisions(&["bad", "bad"], expected).await;
        assert_eq!(decided, [Decision::Unauthenticated; 2]);
    }

    #[tokio::test]
    async fn a_user_without_the_reader_role_is_forbidden() {
        let expected = vec![
            ("POST", TOKEN_REVIEWS.into(), token_review(true)),
            ("POST", ACCESS_REVIEWS.into(), access_review(false)),
        ];
        let (decided, _) = decisions(&["t2"], expected).await;
        assert_eq!(decided, [Decision::Forbidden]);
    }

    /// `Authorizer::decide` for each token at once, on tasks of their own.
    fn deciding_at_once(auth: &Authorizer, tokens: usize) -> Vec<tokio::task::JoinHandle<()>> {
        (0..tokens)
            .map(|i| {
                let auth = auth.clone();
                tokio::spawn(async move {
                    let decided = auth.decide(&format!("t{i}"), "get", "/metrics").await;
                    assert_eq!(decided.unwrap(), Decision::Unauthenticated);
                })
            })
            .collect()
    }

    #[tokio::test]
    async fn reviews_go_out_a_few_at_a_time_and_the_others_wait_their_turn() {
        let (client, mut server) = mock_client();
        let auth = Authorizer::new(client);
        let asked = deciding_at_once(&auth, REVIEWS_AT_ONCE + 1);
        let mut in_flight = Vec::new();
        for _ in 0..REVIEWS_AT_ONCE {
            in_flight.push(server.next_request().await.expect("a review"));
        }
        let next = tokio::time::timeout(Duration::from_millis(300), server.next_request());
        assert!(
            next.await.is_err(),
            "more than {REVIEWS_AT_ONCE} reviews at once"
        );
        let unauthenticated = || {
            let Reply::Json(_, body) = token_review(false) else {
                unreachable!()
            };
            http::Response::new(kube::client::Body::from(serde_json::to_vec(&body).unwrap()))
        };
        // One answered, the request that waited is reviewed.
        let (_, respond) = in_flight.pop().unwrap();
        respond.send_response(unauthenticated());
        in_flight.push(server.next_request().await.expect("the waiting review"));
        for (_, respond) in in_flight {
            respond.send_response(unauthenticated());
        }
        for asked in asked {
            asked.await.unwrap();
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_review_the_api_server_never_answers_fails_in_time() {
        let (client, mut server) = mock_client();
        let auth = Authorizer::new(client);
        let started = tokio::time::Instant::now();
        let never_answered = tokio::spawn(async move {
            let _held = server.next_request().await;
            std::future::pending::<()>().await
        });
        let decided = auth.decide("t", "get", "/metrics").await;
        assert!(matches!(decided, Err(kube::Error::Service(_))));
        assert_eq!(started.elapsed(), REVIEW_TIMEOUT);
        never_answered.abort();
    }

    #[test]
    fn reads_bearer_tokens_only() {
        let headers = |value: &str| {
            let mut map = HeaderMap::new();
            map.insert(header::AUTHORIZATION, value.parse().unwrap());
            map
        };
        assert_eq!(bearer(&headers("Bearer abc")), Some("abc"));
        assert_eq!(bearer(&headers("bearer abc")), Some("abc"));
        assert_eq!(bearer(&headers("Basic abc")), None);
        assert_eq!(bearer(&headers("Bearer ")), None);
        assert_eq!(bearer(&HeaderMap::new()), None);
        let longest = "t".repeat(MAX_TOKEN_BYTES);
        let bearer_of = |token: &str| format!("Bearer {token}");
        assert_eq!(
            bearer(&headers(&bearer_of(&longest))),
            Some(longest.as_str())
        );
        assert_eq!(bearer(&headers(&bearer_of(&format!("{longest}t")))), None);
    }
}
