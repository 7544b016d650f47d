import { WEBHOOK_UPDATES_PER_MINUTE } from '../webhooks/webhook-update-limiter';
import type { Notice } from './portal-layout.view';
import type { Refusal } from './portal.service';

/**
 * What the portal says after an action. A redirect carries only a code (`?done=`), never text, so nothing
 * a link supplies ends up on the page.
 */
export const DONE: Record<string, Notice> = {
  'key-revoked': { kind: 'ok', text: 'The key was revoked. Calls made with it are refused from now on.' },
  'webhook-saved': { kind: 'ok', text: 'Webhook settings saved.' },
  'rotation-confirmed': { kind: 'ok', text: 'Rotation confirmed: deliveries are signed with the new secret only.' },
  'redelivery-queued': { kind: 'ok', text: 'Redelivery queued: the event is sent again under the same delivery id.' },
  'rates-refreshed': { kind: 'ok', text: 'Rates refreshed from the rate source.' },
  'signed-out': { kind: 'ok', text: 'You are signed out.' },
  'password-changed': { kind: 'ok', text: 'Your password was changed. You stay signed in here; every other session of yours was signed out.' },
  'user-invited': { kind: 'ok', text: 'The user was added. Give them the email and initial password; they can change the password under “Your account”.' },
  'user-removed': { kind: 'ok', text: 'The user was removed and signed out everywhere.' },
  'role-changed': { kind: 'ok', text: 'The role was changed.' },
};

export function doneNotice(code: unknown): Notice | undefined {
  return typeof code === 'string' && Object.hasOwn(DONE, code) ? DONE[code] : undefined;
}

export type RefusalContext = 'keys' | 'webhook' | 'rotate' | 'confirm' | 'ping' | 'redeliver' | 'rates' | 'password' | 'invite' | 'remove' | 'role';

/** A refused action in words, for the page the form was on. */
export function refusalNotice(context: RefusalContext, r: Refusal): Notice {
  const items = r.errors.map((e) => e.message);
  switch (r.code) {
    case 'rate_limited':
      if (context === 'rates') {
        return {
          kind: 'error',
          text: 'Not refreshed: rates can be refreshed by hand once per minute for your account, and that refresh was already used this minute (by you, a colleague or an operator). The rates below are unchanged; try again when the next minute starts.',
        };
      }
      if (context === 'ping') return { kind: 'error', text: 'Too many test events this minute. Try again in a minute.' };
      if (context === 'password') return { kind: 'error', text: 'Too many password change attempts this minute. Nothing was changed; try again in a minute.' };
      return {
        kind: 'error',
        text: `Nothing was changed: at most ${WEBHOOK_UPDATES_PER_MINUTE} webhook URL or secret changes per minute are allowed for your account, counting changes made by operators. Try again in a minute.`,
      };
    case 'rate_source_unavailable':
      return { kind: 'error', text: 'The rate source did not answer, so nothing was refreshed. The rates below are unchanged.' };
    case 'invalid_request': {
      const lead: Partial<Record<RefusalContext, string>> = {
        keys: 'The key was not created:',
        password: 'Your password was not changed:',
        invite: 'The user was not added:',
        role: 'The role was not changed:',
      };
      return { kind: 'error', text: lead[context] ?? 'Not saved:', items };
    }
    case 'conflict': {
      const lead: Partial<Record<RefusalContext, string>> = {
        redeliver: 'Not redelivered:',
        invite: 'The user was not added:',
        remove: 'The user was not removed:',
        role: 'The role was not changed:',
      };
      return { kind: 'error', text: lead[context] ?? 'Not done:', items };
    }
    default:
      return { kind: 'error', text: 'The action was refused.', items };
  }
}
