import { constants as cryptoConstants } from "node:crypto";
import type { Socket } from "node:net";
import { TLSSocket, createSecureContext, connect as tlsConnect } from "node:tls";
import type { PeerCertificate, SecureContext } from "node:tls";

/**
 * How a target's TLS connection is started over the TCP connection the dial opened to a checked
 * address: the certificate verified against the host's name, http/1.1 only, no renegotiation, one
 * shared context per trust store.
 */

/**
 * What every target TLS connection negotiates with. A renegotiation asked for by a server is
 * refused: each one is a full handshake of our CPU, and a hostile server can ask in a loop.
 */
function targetTlsOptions(ca: string[] | undefined) {
  return {
    secureOptions: cryptoConstants.SSL_OP_NO_RENEGOTIATION,
    ...(ca ? { ca } : {}),
  };
}

/** The context of the default trust store (public CAs and NODE_EXTRA_CA_CERTS, read at start). */
let defaultSecureContext: SecureContext | undefined;

/**
 * One SecureContext for every connection with the same trust anchors: tls.connect without one
 * builds a new context (and copies the root store into it) per connection, a large share of a
 * handshake's CPU. A context holds no sessions for resumption (Node keeps none in it), so sharing
 * it across snapshots shares nothing else.
 */
export function secureContextFor(ca: string[] | undefined): SecureContext {
  if (ca) return createSecureContext(targetTlsOptions(ca));
  return (defaultSecureContext ??= createSecureContext(targetTlsOptions(undefined)));
}

const chainCertificate = TLSSocket.prototype.getPeerCertificate;

/**
 * Node's check of the server's name after a handshake asks for the whole chain as objects
 * (`getPeerCertificate(true)`) only to read the leaf's names; OpenSSL has verified the chain
 * already. Building the chain is a large share of a client handshake's CPU (docs/snapshot-engine.md
 * "TLS handshakes"), so a target socket answers with the leaf alone.
 */
function leafCertificate(this: TLSSocket): PeerCertificate {
  return chainCertificate.call(this, false);
}

/**
 * TLS over `tcp`, connected to `address`, with the options undici's connector would use
 * (http/1.1 only). No `servername` for an IP literal; `session` resumes a verified one.
 */
export function startTargetTls(
  tcp: Socket,
  address: string,
  servername: string | undefined,
  session: Buffer | undefined,
  secureContext: SecureContext,
): TLSSocket {
  tcp.setNoDelay(true).setKeepAlive(true, 60_000);
  const tlsSocket = tlsConnect({
    socket: tcp,
    host: address,
    ...(servername ? { servername } : {}),
    ...(session ? { session } : {}),
    secureContext,
    ALPNProtocols: ["http/1.1"],
  });
  tlsSocket.getPeerCertificate = leafCertificate as TLSSocket["getPeerCertificate"];
  return tlsSocket;
}
