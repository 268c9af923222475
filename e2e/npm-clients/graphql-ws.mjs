// The graphql-ws client (graphql-transport-ws over the ws package, the key or
// access token in the upgrade's Authorization header) subscribes to
// config.query and keeps config.count events, then completes. It prints the
// events, whether the server acknowledged connection_init, the error the
// subscription ended with (GraphQL errors of an `error` message, or the close
// event of a socket the server closed) and how the socket closed.
import WebSocket from "ws";
import { createClient } from "graphql-ws";
import { authHeaders, config, describeError, fail, print } from "./common.mjs";

class AuthorizedWebSocket extends WebSocket {
  constructor(address, protocols) {
    super(address, protocols, { headers: authHeaders() });
  }
}

const out = { acknowledged: false, events: [] };
let socketClosed;
const closed = new Promise((resolve) => (socketClosed = resolve));
const client = createClient({
  url: config.url,
  webSocketImpl: AuthorizedWebSocket,
  retryAttempts: 0,
  on: {
    connected: () => (out.acknowledged = true),
    closed: (event) => {
      out.closed = { code: event.code, reason: event.reason };
      socketClosed();
    },
  },
});

try {
  await new Promise((resolve) => {
    const unsubscribe = client.subscribe(
      { query: config.query, variables: config.variables },
      {
        next: (result) => {
          out.events.push(result);
          if (out.events.length === config.count) {
            unsubscribe(); // sends `complete`
            resolve();
          }
        },
        error: (err) => {
          out.error = describeError(err);
          resolve();
        },
        complete: resolve,
      },
    );
  });
  await client.dispose();
  await closed;
  print(out);
} catch (err) {
  fail(err);
}
