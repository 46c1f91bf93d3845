// Notifications: desktop notifications for highlights and direct messages. While a tab is open but not looked at, the
// tab shows them itself; with Web Push enabled (docs/contract.md "Push"), the service worker (/sw.js) shows the server's
// pushes when no tab is focused. Both use the tag `belay-<message id>`, so one message never notifies twice.
import { api } from "./Api.js"
import type { MessageRecord } from "./Protocol.js"

export type Permission = "unsupported" | NotificationPermission

export const notificationsSupported = (): boolean => "Notification" in window

export const permission = (): Permission => (notificationsSupported() ? Notification.permission : "unsupported")

const PUSH_ID = "belay.pushSubscription"

export const pushEnabled = () => localStorage.getItem(PUSH_ID) !== null

const keyBytes = (base64url: string): Uint8Array<ArrayBuffer> => {
  const raw = atob(base64url.replace(/-/g, "+").replace(/_/g, "/"))
  const out = new Uint8Array(new ArrayBuffer(raw.length))
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i)
  return out
}

/** Asks the browser, then subscribes to Web Push where it can (a secure context with a push service). */
export const enableNotifications = async (): Promise<string> => {
  if (permission() === "unsupported") return "This browser cannot show notifications."
  const granted = await Notification.requestPermission()
  if (granted !== "granted") return "Notifications were not allowed; the browser's site settings can change that."
  if (!("serviceWorker" in navigator) || !("PushManager" in window)) return "Notifications are on while Belay is open in a tab."
  try {
    const registration = await navigator.serviceWorker.register("/sw.js", { scope: "/" })
    const key = await api<{ publicKey: string }>("GET", "/api/push/vapid-public-key")
    if (!key.ok) return `Notifications are on while a tab is open; push is not available (${key.error}).`
    const subscription = (await registration.pushManager.getSubscription()) ??
      (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(key.body.publicKey) }))
    const saved = await api<{ id: number }>("POST", "/api/push/subscriptions", subscription.toJSON())
    if (!saved.ok) return `Notifications are on while a tab is open; push was refused (${saved.error}).`
    localStorage.setItem(PUSH_ID, String(saved.body.id))
    return "Notifications are on, also when no Belay tab is open."
  } catch (error) {
    return `Notifications are on while a tab is open; push is not available here (${(error as Error).message}).`
  }
}

export const disablePush = async (): Promise<void> => {
  const id = localStorage.getItem(PUSH_ID)
  localStorage.removeItem(PUSH_ID)
  if (id !== null) await api("DELETE", `/api/push/subscriptions/${id}`)
  const registration = await navigator.serviceWorker?.getRegistration("/")
  await (await registration?.pushManager.getSubscription())?.unsubscribe()
}

/** From the open tab, for a line that calls for one while the member looks elsewhere. */
export const notifyLocally = (m: MessageRecord, isQuery: boolean, open: () => void): void => {
  if (permission() !== "granted" || (document.visibilityState === "visible" && document.hasFocus())) return
  const speaker = m.nick ?? m.target
  const n = new Notification(isQuery ? speaker : `${speaker} in ${m.target}`, {
    body: m.kind === "action" ? `* ${speaker} ${m.text}` : m.text,
    tag: `belay-${m.id}`
  })
  n.onclick = () => {
    window.focus()
    open()
    n.close()
  }
}

/** The worker asks the tab to open a buffer (a push notification was clicked). */
export const onWorkerOpen = (open: (networkId: number, target: string) => void) => {
  navigator.serviceWorker?.addEventListener("message", (e: MessageEvent) => {
    const data = e.data as { type?: string; networkId?: number; target?: string } | null
    if (data?.type === "open" && typeof data.networkId === "number" && typeof data.target === "string") open(data.networkId, data.target)
  })
}

