// The graphql-sse client in its "distinct connections" mode (one POST with
// Accept: text/event-stream per operation, the key in Authorization)
// subscribes to config.query and keeps config.count events, then
// unsubscribes; it prints the events and any error the stream ended with.
import { createClient } from "graphql-sse";
import { authHeaders, config, describeError, fail, print } from "./common.mjs";

const client = createClient({ url: config.url, headers: authHeaders, retryAttempts: 0 });
const out = { events: [] };
try {
  await new Promise((resolve) => {
    const unsubscribe = client.subscribe(
      { query: config.query, variables: config.variables },
      {
        next: (result) => {
          out.events.push(result);
          if (out.events.length === config.count) {
            unsubscribe();
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
  client.dispose();
  print(out);
} catch (err) {
  fail(err);
}
