/**
 * A member with one of every kind of row an account owns (services/memberdata/AccountData.ts), written straight into
 * the test database with known secrets, so the deletion and export tests can look for each row, and each secret, by
 * value afterwards.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { sha256 } from "../../../src/services/identity/Tokens.js"
import { Networks } from "../../../src/services/networks/Networks.js"

/** The secrets of member `name`, each its own. */
export const secretsOf = (name: string) => ({
  password: `a long password of ${name}`,
  serverPassword: `server-pass-7f3a-${name}`,
  saslPassword: `sasl-pass-91bc-${name}`,
  channelKey: `chan-key-44de-${name}`,
  apiToken: `belay_rawapitoken0123456789-${name}`,
  oauthToken: `rawoauthtoken0123456789-${name}`,
  session: `rawsessionsecret0123456789-${name}`
})

export interface Member {
  readonly accountId: number
  readonly networkId: number
  readonly bufferIds: ReadonlyArray<number>
  readonly credentialId: Buffer
}

/** Account `name` with a network, two buffers (`messages` lines in the first, 3 in the second) and one row of every other kind. */
export const seedMember = (name: string, messages: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const accounts = yield* Accounts
    const networks = yield* Networks
    const SECRETS = secretsOf(name)
    const account = yield* accounts.create(name, SECRETS.password).pipe(Effect.orDie)
    const networkId = yield* networks.add(name, {
      name: "libera",
      host: "irc.example.org",
      port: 6697,
      tls: true,
      tlsInsecure: false,
      nick: "leaver",
      username: Option.none(),
      realname: Option.none(),
      serverPassword: Option.some(SECRETS.serverPassword),
      sasl: Option.some({ username: "leaver", password: SECRETS.saslPassword }),
      join: []
    }).pipe(Effect.orDie)
    yield* networks.rememberChannel(networkId, "rfc1459", "#keyed", SECRETS.channelKey)
    const bufferIds: Array<number> = []
    for (const target of ["#belay", "friend"]) {
      const [b] = yield* sql<{ id: number }>`
        INSERT INTO buffers (network_id, target, target_folded, kind, e2e_key_enc)
        VALUES (${networkId}, ${target}, ${target}, ${target.startsWith("#") ? "channel" : "dm"},
                ${target === "friend" ? Buffer.from("sealed-fish-key") : null})
        RETURNING id`
      bufferIds.push(b!.id)
    }
    yield* sql`
      INSERT INTO messages (buffer_id, time, kind, nick, text)
      SELECT ${bufferIds[0]!}, now() - (${messages} - i) * interval '1 second', 'privmsg', 'user' || (i % 7), 'line ' || i
      FROM generate_series(1, ${messages}) AS i`
    yield* sql`
      INSERT INTO messages (buffer_id, time, kind, nick, text)
      SELECT ${bufferIds[1]!}, now(), 'privmsg', 'friend', 'dm ' || i FROM generate_series(1, 3) AS i`
    yield* sql`INSERT INTO nick_notes (network_id, nick_folded, nick, note) VALUES (${networkId}, 'bob', 'Bob', 'met at FOSDEM')`
    yield* sql`INSERT INTO relay_bots (network_id, nick_folded, nick, pattern) VALUES (${networkId}, 'relay', 'Relay', NULL)`
    yield* sql`
      INSERT INTO read_markers (account_id, network_id, target_folded, message_id)
      VALUES (${account.id}, ${networkId}, '#belay', 1)`
    yield* sql`
      INSERT INTO client_deliveries (account_id, network_id, client_name, message_id)
      VALUES (${account.id}, ${networkId}, 'laptop', 1)`
    yield* sql`
      INSERT INTO api_tokens (account_id, name, scope, token_hash)
      VALUES (${account.id}, 'agent', 'read-write', ${sha256(SECRETS.apiToken)})`
    const [token] = yield* sql<{ id: number }>`
      INSERT INTO oauth_tokens (token_hash, kind, account_id, created_at)
      VALUES (${sha256(SECRETS.oauthToken)}, 'password', ${account.id}, now()) RETURNING id`
    yield* sql`
      INSERT INTO browser_sessions (account_id, token_hash, created_at, expires_at, last_seen_at)
      VALUES (${account.id}, ${sha256(SECRETS.session)}, now(), now() + interval '1 day', now())`
    const credentialId = Buffer.from(`passkey-of-${name}`)
    yield* sql`
      INSERT INTO passkeys (account_id, credential_id, public_key, name, user_handle)
      VALUES (${account.id}, ${credentialId}, ${Buffer.from("pk")}, 'phone', ${Buffer.from("handle")})`
    yield* sql`
      INSERT INTO push_subscriptions (account_id, oauth_token_id, endpoint, p256dh, auth, created_at)
      VALUES (${account.id}, ${token!.id}, ${`https://push.example/${name}`}, 'p256dh', 'auth', now())`
    // An IRC client's (soju.im/webpush), signed in with the password, on the network.
    yield* sql`
      INSERT INTO push_subscriptions (account_id, password_owner, kind, network_id, irc_caps, endpoint, p256dh, auth, created_at)
      VALUES (${account.id}, true, 'irc', ${networkId}, 'server-time', ${`https://push.example/irc-${name}`}, 'p256dh', 'auth',
              now())`
    return { accountId: account.id, networkId, bufferIds, credentialId } satisfies Member
  })

/** Rows still held anywhere for `member`, by table (0 everywhere once deleted). */
export const rowsOf = (member: Member) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const count = (rows: ReadonlyArray<{ n: number }>) => rows[0]!.n
    const a = member.accountId
    const n = member.networkId
    return {
      accounts: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM accounts WHERE id = ${a}`),
      deletions: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM account_deletions WHERE account_id = ${a}`),
      networks: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM networks WHERE account_id = ${a}`),
      channels: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM channels WHERE network_id = ${n}`),
      buffers: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM buffers WHERE network_id = ${n}`),
      messages: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM messages WHERE ${sql.in("buffer_id", member.bufferIds)}`),
      nickNotes: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM nick_notes WHERE network_id = ${n}`),
      relayBots: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM relay_bots WHERE network_id = ${n}`),
      readMarkers: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM read_markers WHERE network_id = ${n}`),
      clientDeliveries: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM client_deliveries WHERE network_id = ${n}`),
      apiTokens: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM api_tokens WHERE account_id = ${a}`),
      oauthTokens: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM oauth_tokens WHERE account_id = ${a}`),
      sessions: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM browser_sessions WHERE account_id = ${a}`),
      passkeys: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM passkeys WHERE account_id = ${a}`),
      pushSubscriptions: count(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM push_subscriptions WHERE account_id = ${a}`)
    }
  })
