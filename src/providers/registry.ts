import type { ProviderSettings } from '../config/settings.js';
import type { CanonicalEvent } from '../model/payment-event.js';
import { ProviderNotConfiguredError, UnknownProviderError } from '../errors.js';
import { payu } from './payu/index.js';
import { unstorableText } from '../model/delivery.js';
import { isProviderName, PROVIDER_NAMES, type ProviderName, type VerifiedEvent } from '../model/delivery.js';
import { type ProviderDefinition, type Verifier } from './provider.js';
import { razorpay } from './razorpay/index.js';
import { stripe } from './stripe/index.js';

const DEFINITIONS: { [P in ProviderName]: ProviderDefinition<NonNullable<ProviderSettings[P]>> } = { stripe, razorpay, payu };

/** The providers of one running inbox: a verifier for each configured one, a normaliser for all. */
export class ProviderRegistry {
  private readonly verifiers = new Map<ProviderName, Verifier>();

  constructor(settings: ProviderSettings) {
    for (const name of PROVIDER_NAMES) {
      const providerSettings = settings[name];
      // The definitions table is keyed by name, so each definition receives its own settings type.
      if (providerSettings) this.verifiers.set(name, (DEFINITIONS[name] as ProviderDefinition<typeof providerSettings>).createVerifier(providerSettings));
    }
  }

  /** Fails closed: an unknown provider is a 404, a known one without secrets a 503. */
  verifier(name: string): Verifier {
    if (!isProviderName(name)) throw new UnknownProviderError(name);
    const verifier = this.verifiers.get(name);
    if (!verifier) throw new ProviderNotConfiguredError(name, DEFINITIONS[name].variables);
    return verifier;
  }

  unconfigured(): Array<{ name: ProviderName; variables: string[] }> {
    return PROVIDER_NAMES.filter((name) => !this.verifiers.has(name)).map((name) => ({ name, variables: DEFINITIONS[name].variables }));
  }

  /**
   * The payment a verified event is about, read at receipt so the claim can keep two events of one
   * payment from running at the same time. Null for events about no payment, and for an id that cannot
   * be stored whole as a key (processing will report it).
   */
  paymentIdOf(event: VerifiedEvent): string | null {
    const canonical = this.toCanonical(event.provider, { eventType: event.eventType, payload: event.parsedPayload ?? (JSON.parse(event.payload) as unknown) });
    return canonical.kind === 'payment' && unstorableText(canonical.paymentId) === null ? canonical.paymentId : null;
  }

  /** What a stored event means for a payment; a field, so it can be handed on without its registry. */
  readonly toCanonical = (provider: string, event: { eventType: string; payload: unknown }): CanonicalEvent => {
    if (!isProviderName(provider)) return { kind: 'ignored', reason: `unknown provider ${provider}` };
    return DEFINITIONS[provider].toCanonical(event);
  };
}
