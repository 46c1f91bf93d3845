/**
 * PasskeyScript owns the one script our pages run: the browser side of the passkey
 * ceremonies (W3C WebAuthn Level 3 §5.1.3 `create()`, §5.1.4 `get()`). It is served
 * same-origin from `/assets/` under a name carrying its hash (so it may be cached for a
 * year), loaded with `<script src defer>` — no inline script, so the pages' CSP is
 * `script-src 'self'` — and finds its work through `data-` attributes:
 *
 *   - `[data-passkey-sign-in]` (a region holding a button): fetches options from
 *     `data-options`, asks the authenticator, posts `{credential, next}` to `data-submit`,
 *     and follows the `redirect` of a 200;
 *   - `form[data-passkey-register]` (holding an input `name`): fetches options for that
 *     name from `data-options`, creates the credential, posts `{credential}` to the form's
 *     `action`, and reloads the page on 201.
 *
 * Every failure is written into the region's `[role=alert]` element. Regions start
 * `hidden` and are shown only where `PublicKeyCredential` exists. The binary members of
 * the options and credentials are converted to and from base64url here rather than with
 * `PublicKeyCredential.parseCreationOptionsFromJSON`/`toJSON`, which not every browser
 * that supports passkeys has. Plain ES2017, no dependencies. Immutable text.
 */
import * as Crypto from "node:crypto"

export const PASSKEY_SCRIPT = String.raw`"use strict";
(function () {
  if (!window.PublicKeyCredential || !navigator.credentials) return;

  function toBytes(value) {
    var base64 = value.replace(/-/g, "+").replace(/_/g, "/");
    while (base64.length % 4 !== 0) base64 += "=";
    var binary = atob(base64);
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes.buffer;
  }

  function fromBytes(buffer) {
    var bytes = new Uint8Array(buffer);
    var binary = "";
    for (var i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
    return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function descriptors(list) {
    return (list || []).map(function (c) {
      return { type: c.type, id: toBytes(c.id), transports: c.transports };
    });
  }

  function postJson(url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", "accept": "application/json" },
      body: JSON.stringify(body)
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (json) {
        return { status: response.status, body: json };
      });
    });
  }

  function explain(status, body, fallback) {
    if (status === 429) return "Too many failed sign-ins. Wait a few minutes and try again.";
    return (body && typeof body.message === "string") ? body.message : fallback;
  }

  function alertOf(region) {
    return region.querySelector("[role=alert]");
  }

  function show(region, message) {
    var alert = alertOf(region);
    alert.textContent = message;
    alert.hidden = false;
  }

  function signIn(region, button) {
    var fallback = "Passkey sign-in failed.";
    alertOf(region).hidden = true;
    button.disabled = true;
    postJson(region.getAttribute("data-options"), {}).then(function (options) {
      if (options.status !== 200) throw new Error(explain(options.status, options.body, fallback));
      var o = options.body;
      return navigator.credentials.get({
        publicKey: {
          challenge: toBytes(o.challenge),
          rpId: o.rpId,
          timeout: o.timeout,
          userVerification: o.userVerification,
          allowCredentials: descriptors(o.allowCredentials)
        }
      });
    }).then(function (credential) {
      if (!credential) throw new Error(fallback);
      var r = credential.response;
      var json = {
        id: credential.id,
        rawId: fromBytes(credential.rawId),
        type: credential.type,
        response: {
          clientDataJSON: fromBytes(r.clientDataJSON),
          authenticatorData: fromBytes(r.authenticatorData),
          signature: fromBytes(r.signature)
        },
        clientExtensionResults: credential.getClientExtensionResults()
      };
      if (r.userHandle) json.response.userHandle = fromBytes(r.userHandle);
      if (credential.authenticatorAttachment) json.authenticatorAttachment = credential.authenticatorAttachment;
      return postJson(region.getAttribute("data-submit"), { credential: json, next: region.getAttribute("data-next") || "/" });
    }).then(function (result) {
      if (result.status !== 200 || typeof result.body.redirect !== "string") {
        throw new Error(explain(result.status, result.body, fallback));
      }
      window.location.assign(result.body.redirect);
    }).catch(function (error) {
      button.disabled = false;
      show(region, error && error.name === "NotAllowedError" ? "The passkey prompt was cancelled or timed out." : (error && error.message) || fallback);
    });
  }

  function register(form) {
    var fallback = "The passkey could not be added.";
    var button = form.querySelector("button[type=submit]");
    alertOf(form).hidden = true;
    button.disabled = true;
    postJson(form.getAttribute("data-options"), { name: form.elements.namedItem("name").value }).then(function (options) {
      if (options.status !== 200) throw new Error(explain(options.status, options.body, fallback));
      var o = options.body;
      return navigator.credentials.create({
        publicKey: {
          rp: o.rp,
          user: { id: toBytes(o.user.id), name: o.user.name, displayName: o.user.displayName },
          challenge: toBytes(o.challenge),
          pubKeyCredParams: o.pubKeyCredParams,
          timeout: o.timeout,
          excludeCredentials: descriptors(o.excludeCredentials),
          authenticatorSelection: o.authenticatorSelection,
          attestation: o.attestation,
          extensions: o.extensions
        }
      });
    }).then(function (credential) {
      if (!credential) throw new Error(fallback);
      var r = credential.response;
      var json = {
        id: credential.id,
        rawId: fromBytes(credential.rawId),
        type: credential.type,
        response: {
          clientDataJSON: fromBytes(r.clientDataJSON),
          attestationObject: fromBytes(r.attestationObject)
        },
        clientExtensionResults: credential.getClientExtensionResults()
      };
      if (typeof r.getTransports === "function") json.response.transports = r.getTransports();
      if (credential.authenticatorAttachment) json.authenticatorAttachment = credential.authenticatorAttachment;
      return postJson(form.getAttribute("action"), { credential: json });
    }).then(function (result) {
      if (result.status !== 201) throw new Error(explain(result.status, result.body, fallback));
      window.location.reload();
    }).catch(function (error) {
      button.disabled = false;
      show(form, error && error.name === "NotAllowedError" ? "The passkey prompt was cancelled or timed out." : (error && error.message) || fallback);
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll("[data-passkey-sign-in]"), function (region) {
    var button = region.querySelector("button");
    region.hidden = false;
    button.addEventListener("click", function () { signIn(region, button); });
  });

  Array.prototype.forEach.call(document.querySelectorAll("form[data-passkey-register]"), function (form) {
    form.hidden = false;
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      register(form);
    });
  });
})();
`

const hash = Crypto.createHash("sha256").update(PASSKEY_SCRIPT).digest("base64url").slice(0, 12)

/** The script's file name under /assets/: it changes whenever the script does. */
export const PASSKEY_SCRIPT_FILE = `passkeys.${hash}.js`
export const PASSKEY_SCRIPT_PATH = `/assets/${PASSKEY_SCRIPT_FILE}`
