import type { ProviderSettings } from '../../config/settings.js';
import { payuSignedBody } from '../../providers/payu/sign.js';
import { razorpaySignedHeaders } from '../../providers/razorpay/sign.js';
import { stripeSignedHeaders } from '../../providers/stripe/sign.js';
import type { ProviderName } from '../../model/delivery.js';
import { OperationError } from '../errors.js';
import { randomId, type SimulatedEvent } from './simulated-events.js';

/** An HTTP request as the provider would send it. */
export interface SignedDelivery {
  provider: ProviderName;
  headers: Record<string, string>;
  body: string;
}

const SECRET_VARIABLES: Record<ProviderName, string> = {
  stripe: 'STRIPE_WEBHOOK_SECRET',
  razorpay: 'RAZORPAY_WEBHOOK_SECRET',
  payu: 'PAYU_MERCHANT_KEY and PAYU_MERCHANT_SALT',
};

/**
 * Signs an event with the configured secrets exactly as the provider does (Stripe: `t=,v1=` over
 * "t.body"; Razorpay: HMAC of the body plus the event id header; PayU: the reverse hash as a form
 * field). `forged` signs with a made-up secret, to see the endpoint refuse it.
 */
export function signEvent(event: SimulatedEvent, providers: ProviderSettings, options: { now?: Date; forged?: boolean } = {}): SignedDelivery {
  const forgedSecret = options.forged ? randomId('forged_', 24) : undefined;
  switch (event.provider) {
    case 'stripe': {
      const secret = forgedSecret ?? requireSettings(providers.stripe, 'stripe').secrets[0]!;
      const body = JSON.stringify(event.json);
      return { provider: 'stripe', headers: stripeSignedHeaders(body, secret, options.now ?? new Date()), body };
    }
    case 'razorpay': {
      const secret = forgedSecret ?? requireSettings(providers.razorpay, 'razorpay').secrets[0]!;
      const body = JSON.stringify(event.json);
      return { provider: 'razorpay', headers: razorpaySignedHeaders(body, secret, event.eventId), body };
    }
    case 'payu': {
      const { merchantKey, merchantSalt } = requireSettings(providers.payu, 'payu');
      return { provider: 'payu', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: payuSignedBody(event.fields, forgedSecret ?? merchantSalt, merchantKey) };
    }
  }
}

function requireSettings<T>(settings: T | null, provider: ProviderName): T {
  if (settings === null) throw new OperationError(`cannot sign ${provider} events: set ${SECRET_VARIABLES[provider]} (the endpoint's own secret)`, 'provider_not_configured');
  return settings;
}
