/**
 * ListenerDeps: what every IRC client session reaches the rest of Belay through, resolved once when the listener is
 * built (IrcListener.ts): the network actors' port, the history, read markers, client deliveries, networks, accounts,
 * credentials (and whether they still work) and the sign-in limiter, and the hub of sessions. Plain values; shared by every session.
 */
import type { NetworkControlService } from "../actors/NetworkApi.js"
import type { Accounts } from "../services/identity/Accounts.js"
import type { ApiTokens } from "../services/identity/ApiTokens.js"
import type { Authenticator } from "../services/identity/Authenticator.js"
import type { ClientDeliveries } from "../services/history/ClientDeliveries.js"
import type { MessageHistory } from "../services/history/MessageHistory.js"
import type { Networks } from "../services/networks/Networks.js"
import type { OAuthTokens } from "../services/identity/OAuthTokens.js"
import type { ReadMarkers } from "../services/history/ReadMarkers.js"
import type { BufferPreferences } from "../services/preferences/BufferPreferences.js"
import type { SignInLimiter } from "../services/identity/SignInLimiter.js"
import type { DestinationGuard } from "../services/egress/DestinationGuard.js"
import type { PushSubscriptions } from "../services/push/PushSubscriptions.js"
import type { SessionHub } from "./SessionHub.js"
import type { ClientTagMemo } from "./ClientTagMemo.js"
import type { UpstreamLabels } from "./UpstreamLabels.js"

export interface ListenerDeps {
  readonly control: NetworkControlService
  readonly history: MessageHistory
  readonly markers: ReadMarkers
  /** What the member chose per buffer: the draft/metadata-2 keys (Metadata.ts). */
  readonly preferences: BufferPreferences
  readonly deliveries: ClientDeliveries
  readonly networks: Networks
  readonly accounts: Accounts
  readonly authenticator: Authenticator
  /** Whether a token a client signed in with is still live (CredentialCheck.ts). */
  readonly apiTokens: ApiTokens
  readonly oauthTokens: OAuthTokens
  readonly limiter: SignInLimiter
  readonly hub: SessionHub
  readonly labels: UpstreamLabels
  /** The client-only tags of the member's sent messages, for their stored rows (ClientTagMemo.ts). */
  readonly clientTags: ClientTagMemo
  /** soju.im/webpush (WebPush.ts): the subscriptions, the web's VAPID public key, the guard that judges endpoints. */
  readonly push: {
    readonly subscriptions: PushSubscriptions
    readonly publicKey: string
    readonly guard: DestinationGuard
    /** BELAY_PUSH_INSECURE_ENDPOINTS: http endpoints accepted too. */
    readonly insecureEndpoints: boolean
  }
  /** The `soju.im/FILEHOST` ISUPPORT value, the upload endpoint's URL; undefined: not advertised (Uploads.filehostUrl). */
  readonly filehost?: string | undefined
}
