/** The knobs of the planted signals (see signals.ts), shared by the population and the signal generators. */
export interface SignalParams {
  /** sd of the customers' log visit rate (own heterogeneity that recency/frequency features can see) */
  customerRateSigma: number;
  /** range of the weight of a customer's primary section (the other two share the rest) */
  primaryPref: readonly [number, number];
  /** range of the return-cycle peaks (days after a visit, log-uniform per section) */
  rhythmPeak: readonly [number, number];
  /** height of the return-cycle peak over the floor, and the range of the floor */
  rhythmAmplitude: number;
  rhythmFloor: readonly [number, number];
  /** share of the peak the hazard keeps after it (0: a pure peak, 1: a plateau, "due for a purchase") */
  rhythmAfterPeak: number;
  /** sd of a section's persistent log-popularity level */
  trendBase: number;
  /** sd of a section's log-trend drift over the whole window */
  trendDrift: number;
  /** probability that a section collapses at some random day, and the log-size of the drop [min, max] */
  collapseProb: number;
  collapseDepth: readonly [number, number];
  /** probability that a section rises at some random day, and the log-size of the rise [min, max] */
  riseProb: number;
  riseHeight: readonly [number, number];
  /** days a collapse or rise takes to complete */
  trendRampDays: number;
  /** mean lengths of active and dormant spells (days) and the rate multiplier while dormant */
  activeSpellDays: number;
  dormantSpellDays: number;
  dormantRate: number;
  /** share of all transactions that are account-takeover purchases, ring purchases, and unexplained fraud */
  atoShare: number;
  ringShare: number;
  randomFraudShare: number;
  /** ring size [min, max], target articles per burst [min, max] */
  ringMembers: readonly [number, number];
  ringArticles: readonly [number, number];
  /** probability that a ring member buys on a burst day, and that a ring purchase is labelled fraud */
  ringDailyBuy: number;
  ringFraudProb: number;
  /** probability that an account-takeover purchase is labelled fraud (some go unreported) */
  atoFraudProb: number;
  /** probability that a takeover is online (legitimate visits: ~70%) and that it happens at night */
  atoOnline: number;
  atoNight: number;
}
