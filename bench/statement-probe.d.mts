/** Types of statement-probe.mjs, which runs untranspiled inside the compiled service. */
export function statementShape(sql: string): string;
