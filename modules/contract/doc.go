// Package contract is what civicgate's modules, and the upstream behind them,
// exchange — one package, so that both sides of every exchange read the same
// definition:
//
//   - the identity assertion civic_auth sends upstream in X-Civic-Identity
//     (SignIdentity, VerifyIdentity, Claims; docs/design.md D9), verified by
//     recordsd or any other upstream;
//   - the request value (Request: the caller, its bearer token and credential
//     watch, the rate limiter's charger and cost budget, the GraphQL request
//     as the guard decoded it), attached once by civic_auth and read by the
//     handlers after it (docs/design.md D45);
//   - the names of the placeholders the handlers publish and read
//     ({civic.*} from civic_auth, {graphql.*} from graphql_guard; docs/design.md D2);
//   - the rate syntax of tiers and limits (ParseRate; docs/design.md D11), so that a
//     tier civic_auth accepts is one civic_rate_limit can enforce;
//   - the exact client-facing error bodies (docs/api.md "Errors", docs/design.md
//     D10) and the writer that sends them (JSONWriter, WriteJSON);
//   - the change feed the records backend writes and the webhooks and the
//     response cache read: table, advisory lock key and NOTIFY channel
//     (ChangeEventsTable, ChangeEventsLockKey, ChangeEventsChannel;
//     docs/design.md D14).
//
// It depends on the standard library and golang-jwt only, never on Caddy or
// another module, so an upstream (backend/ imports nothing else of modules/)
// may import it. modules/contract/README.md describes each exchange: who sets
// it, who reads it.
package contract
