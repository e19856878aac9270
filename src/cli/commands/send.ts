import { Argument, type Command } from 'commander';
import { systemClock } from '../../clock.js';
import { PROVIDER_NAMES, type ProviderName } from '../../model/delivery.js';
import { simulateEvent, SIMULATED_EVENT_TYPES } from '../../ops/simulator/simulated-events.js';
import { sendEvent } from '../../ops/simulator/send.js';
import { configOrExit, EXIT_FAILED, positiveIntegerOption } from '../context.js';
import { printJson, printTable } from '../output.js';

interface SendFlags {
  url?: string;
  repeat: number;
  concurrent: number;
  payment?: string;
  user?: string;
  course?: string;
  amount?: number;
  forged?: boolean;
  json?: boolean;
}

export function registerSendCommand(program: Command): void {
  const types = PROVIDER_NAMES.map((p) => `  ${p}: ${SIMULATED_EVENT_TYPES[p].join(', ')}`).join('\n');
  program
    .command('send')
    .addArgument(new Argument('<provider>', 'the provider').choices(PROVIDER_NAMES))
    .argument('<event-type>', 'see the list below')
    .description("sign a realistic test event with the configured secrets and deliver it, like the providers' own test tools")
    .addHelpText('after', `\nEvent types:\n${types}`)
    .option('--url <url>', 'the service (http://host:port) or a full webhook URL (default http://127.0.0.1:$PORT)')
    .option('--repeat <n>', 'send the same event this many times, one after the other', positiveIntegerOption, 1)
    .option('--concurrent <n>', 'send this many copies at the same time (per repeat)', positiveIntegerOption, 1)
    .option('--payment <id>', "the provider's payment id (PaymentIntent pi_..., Razorpay pay_..., PayU txnid); same id = same payment")
    .option('--user <id>', 'user id in the metadata (course platform)')
    .option('--course <id>', 'course id in the metadata (course platform)')
    .option('--amount <minor-units>', 'amount in cents / paise', positiveIntegerOption)
    .option('--forged', 'sign with a wrong secret: the endpoint should answer 401')
    .option('--json', 'print JSON')
    .action(async (name: ProviderName, eventType: string, flags: SendFlags) => {
      const config = configOrExit().config;
      const event = simulateEvent(name, eventType, { paymentId: flags.payment, userId: flags.user, courseId: flags.course, amountMinor: flags.amount }, systemClock.now());
      const report = await sendEvent(event, config.providers, systemClock, {
        url: flags.url ?? `http://127.0.0.1:${config.port}`,
        repeat: flags.repeat,
        concurrent: flags.concurrent,
        forged: flags.forged,
      });
      const expected = flags.forged ? (status: number | null) => status === 401 : (status: number | null) => status !== null && status >= 200 && status < 300;
      const unexpected = report.deliveries.filter((d) => !expected(d.status)).length;
      if (flags.json) printJson({ ...report, unexpected });
      else {
        console.log(`${report.provider} ${report.eventType} ${report.eventId} (payment ${report.paymentId}) -> ${report.url}`);
        printTable(Object.entries(report.answers), [
          ['answer', ([answer]) => answer, 'whole'],
          ['deliveries', ([, count]) => count],
        ]);
        const times = report.deliveries.map((d) => d.ms).sort((a, b) => a - b);
        console.log(
          `${report.deliveries.length} deliveries, ${unexpected} unexpected answers; slowest ${times[times.length - 1]} ms, median ${times[Math.floor(times.length / 2)]} ms`,
        );
      }
      if (unexpected > 0) process.exitCode = EXIT_FAILED;
    });
}
