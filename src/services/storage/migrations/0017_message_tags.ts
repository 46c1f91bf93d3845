/**
 * Message ids, replies, reactions and redaction (docs/decisions/history.md "Message ids, replies, reactions and
 * redaction"; docs/contract.md "Message ids, replies, reactions and redaction"):
 * - `msgid`: the upstream's IRCv3 `msgid` tag, as given (NULL when it gave none, or one Belay does not keep: longer
 *   than 256 characters or holding a space or control character; MessageRow.ts);
 * - `reply_to`: the msgid named by the `+draft/reply` client tag (same bounds);
 * - `redacted`: the upstream removed the message (draft/message-redaction); its text is '' and its raw line NULL;
 * - kind `react`: an upstream TAGMSG carrying `+draft/react` (text = the reaction, reply_to = the message reacted to).
 *
 * Cheap on a table of millions of rows: ADD COLUMN without a default or with a constant one only changes the catalog
 * (PostgreSQL >= 11), and the CHECK constraints are added NOT VALID (new rows are checked, old ones are not read).
 * The partial index reads the table once (every existing row has msgid NULL, so it stays empty and nothing is sorted);
 * that scan holds writes back while it runs, seconds per million rows, once, at the upgrade.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE messages
      ADD COLUMN msgid text,
      ADD COLUMN reply_to text,
      ADD COLUMN redacted boolean NOT NULL DEFAULT false`
  // 0001's CHECK on kind (PostgreSQL named it messages_kind_check), widened by `react`.
  yield* sql`ALTER TABLE messages DROP CONSTRAINT messages_kind_check`
  yield* sql`
    ALTER TABLE messages
      ADD CONSTRAINT messages_kind_check CHECK (kind IN (
        'privmsg', 'notice', 'action', 'join', 'part', 'quit', 'kick', 'nick', 'mode', 'topic', 'numeric', 'error', 'react'
      )) NOT VALID,
      ADD CONSTRAINT messages_msgid_length CHECK (length(msgid) <= 256) NOT VALID,
      ADD CONSTRAINT messages_reply_to_length CHECK (length(reply_to) <= 256) NOT VALID`
  // A message by its upstream msgid within its buffer: a redaction, a CHATHISTORY `msgid=` reference.
  yield* sql`CREATE INDEX messages_msgid ON messages (buffer_id, msgid) WHERE msgid IS NOT NULL`
})
