#pragma once
// The production transport: every upstream, http:// and https://, over our own
// HTTP/1.1 sockets (SocketTransport). Why not QNetworkAccessManager for https,
// which would negotiate HTTP/2:
// - QNAM (Qt 6.4) reads an HTTP/1.1 response head without any bound: a peer
//   that never ends its status or header lines grows our memory until the
//   deadline; our parser ends the attempt at 64 KiB as `transport`.
// - QNAM re-sends a POST once when the connection is reset before the answer,
//   so a provider that processed the request bills it twice; a socket call
//   sends a request once (it retries only a reused keep-alive connection that
//   died before the request could have been read: while it was being written, or
//   within SocketUpstreamCall::kStaleRetryMs of it).
// - It adds ~300 µs per request where the socket transport adds ~40 µs.
// The official OpenAI and Anthropic SDKs speak HTTP/1.1 to these APIs too. The
// cost: concurrent streams to one host each hold their own TLS connection
// (pooled and reused while idle) instead of sharing one HTTP/2 connection.
// QtTransport stays available behind the same interface.

#include "core/upstream/socket_transport.h"

namespace sw::upstream {

using DefaultTransport = SocketTransport;

} // namespace sw::upstream
