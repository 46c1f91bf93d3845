/**
 * The whole product's schema, designed up front: accounts and sign-in,
 * IRC networks and their history, per-nick data, API tokens and the OAuth server.
 *
 * Conventions: ids are bigint identities (they reach JSON as numbers, see Database.ts);
 * times are timestamptz; every secret is stored either hashed (SHA-256 of tokens,
 * codes and sessions; argon2id of passwords) or encrypted (upstream passwords, channel
 * keys, FiSH keys: AES-256-GCM by SecretBox). Names that IRC compares
 * case-insensitively keep their display casing plus a `*_folded` column folded with
 * the network's CASEMAPPING, which uniqueness and lookups use.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE accounts (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      name text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
      password_hash text NOT NULL,
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
      created_at timestamptz NOT NULL DEFAULT now(),
      password_changed_at timestamptz NOT NULL DEFAULT now(),
      recovered_at timestamptz
    )`

  // Browser sign-in sessions for the approval page (and later the web client).
  yield* sql`
    CREATE TABLE browser_sessions (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      token_hash bytea NOT NULL UNIQUE,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      last_seen_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX browser_sessions_account ON browser_sessions (account_id)`

  yield* sql`
    CREATE TABLE passkeys (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      credential_id bytea NOT NULL UNIQUE,
      public_key bytea NOT NULL,
      sign_count bigint NOT NULL DEFAULT 0,
      transports text[] NOT NULL DEFAULT '{}',
      name text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_used_at timestamptz
    )`

  yield* sql`
    CREATE TABLE networks (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
      host text NOT NULL CHECK (length(host) BETWEEN 1 AND 253),
      port integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
      tls boolean NOT NULL DEFAULT false,
      tls_insecure boolean NOT NULL DEFAULT false,
      nick text NOT NULL,
      username text,
      realname text,
      server_password_enc bytea,
      sasl_username text,
      sasl_password_enc bytea,
      -- false after disconnect_network: the supervisor keeps the actor offline across restarts
      enabled boolean NOT NULL DEFAULT true,
      away_message text,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (account_id, name)
    )`

  // Channels the account wants joined (rejoined after every reconnect) and their keys.
  yield* sql`
    CREATE TABLE channels (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      network_id bigint NOT NULL REFERENCES networks(id) ON DELETE CASCADE,
      name text NOT NULL,
      name_folded text NOT NULL,
      key_enc bytea,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (network_id, name_folded)
    )`

  // One row per conversation: a channel, a DM peer, or the server pseudo-buffer.
  yield* sql`
    CREATE TABLE buffers (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      network_id bigint NOT NULL REFERENCES networks(id) ON DELETE CASCADE,
      target text NOT NULL,
      target_folded text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('channel', 'dm', 'server')),
      last_message_at timestamptz,
      -- FiSH key of an end-to-end encrypted channel or DM, encrypted at rest
      e2e_key_enc bytea,
      UNIQUE (network_id, target_folded)
    )`

  yield* sql`
    CREATE TABLE messages (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      buffer_id bigint NOT NULL REFERENCES buffers(id) ON DELETE CASCADE,
      time timestamptz NOT NULL,
      kind text NOT NULL CHECK (kind IN ('privmsg', 'notice', 'action', 'join', 'part', 'quit', 'kick', 'nick', 'mode', 'topic', 'numeric', 'error')),
      nick text,
      text text NOT NULL DEFAULT '',
      numeric text,
      self boolean NOT NULL DEFAULT false,
      -- 'plain', 'decrypted' (arrived as FiSH +OK and was decrypted), 'undecryptable'
      encryption text NOT NULL DEFAULT 'plain' CHECK (encryption IN ('plain', 'decrypted', 'undecryptable')),
      raw text,
      -- 'simple': IRC is multilingual, so no stemming or stop words; terms are ANDed by the query.
      -- 0002 narrows this to the text alone.
      tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', coalesce(nick, '') || ' ' || text)) STORED
    )`
  // Serves "newest N before id X in a buffer" (recent_messages) as a backward index scan.
  yield* sql`CREATE INDEX messages_buffer_id ON messages (buffer_id, id)`
  yield* sql`CREATE INDEX messages_tsv ON messages USING gin (tsv)`

  yield* sql`
    CREATE TABLE nick_notes (
      network_id bigint NOT NULL REFERENCES networks(id) ON DELETE CASCADE,
      nick_folded text NOT NULL,
      nick text NOT NULL,
      note text NOT NULL CHECK (length(note) BETWEEN 1 AND 4096),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (network_id, nick_folded)
    )`

  yield* sql`
    CREATE TABLE relay_bots (
      network_id bigint NOT NULL REFERENCES networks(id) ON DELETE CASCADE,
      nick_folded text NOT NULL,
      nick text NOT NULL,
      pattern text,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (network_id, nick_folded)
    )`

  yield* sql`
    CREATE TABLE api_tokens (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
      scope text NOT NULL CHECK (scope IN ('read', 'read-write')),
      token_hash bytea NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_used_at timestamptz,
      revoked_at timestamptz,
      UNIQUE (account_id, name)
    )`

  yield* sql`
    CREATE TABLE oauth_clients (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      client_id text NOT NULL UNIQUE,
      client_name text NOT NULL,
      client_uri text,
      redirect_uris text[] NOT NULL,
      registered_ip text,
      created_at timestamptz NOT NULL,
      -- null while pending; pending registrations are deleted after one hour
      approved_at timestamptz
    )`
  yield* sql`CREATE INDEX oauth_clients_pending ON oauth_clients (created_at) WHERE approved_at IS NULL`

  // The validated authorization request behind one approval page: single use, bound to
  // the browser session and a CSRF token (RFC 9700 §4.7).
  yield* sql`
    CREATE TABLE oauth_consents (
      id_hash bytea PRIMARY KEY,
      session_id bigint NOT NULL REFERENCES browser_sessions(id) ON DELETE CASCADE,
      client_id text NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
      redirect_uri text NOT NULL,
      state text,
      code_challenge text NOT NULL,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    )`

  yield* sql`
    CREATE TABLE oauth_codes (
      code_hash bytea PRIMARY KEY,
      client_id text NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      redirect_uri text NOT NULL,
      code_challenge text NOT NULL,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      -- set when claimed (successfully or not): a code is claimed exactly once
      spent_at timestamptz,
      token_id bigint
    )`

  yield* sql`
    CREATE TABLE oauth_tokens (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      token_hash bytea NOT NULL UNIQUE,
      client_id text NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL,
      revoked_at timestamptz
    )`
  yield* sql`CREATE INDEX oauth_tokens_account ON oauth_tokens (account_id) WHERE revoked_at IS NULL`
})
