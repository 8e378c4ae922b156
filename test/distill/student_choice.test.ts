/**
 * The distill run keeps the variant best on validation: the full student, unless an ablation scores
 * higher on the selection metric AND its lift's 95% paired bootstrap interval over the full student lies
 * above 0; the first of equal scores kept.
 */
import { describe, expect, it } from 'vitest';
import { chooseStudent, type AblationVariant, type StudentVariant } from '../../src/distill/student_choice.js';
import type { Interval } from '../../src/task/intervals.js';

const above: Interval = [0.01, 0.05];
const holdsZero: Interval = [-0.02, 0.04];

describe('chooseStudent', () => {
  it.each([
    ['the full student, best', { student: 0.9, features_only: 0.8, embedding_only: 0.85, rti_only: 0.7 }, above, 'student'],
    ['embedding_only, better beyond noise', { student: 0.9, features_only: 0.8, embedding_only: 0.93, rti_only: 0.7 }, above, 'embedding_only'],
    ['embedding_only, better but within noise: the full student', { student: 0.9, features_only: 0.8, embedding_only: 0.93, rti_only: 0.7 }, holdsZero, 'student'],
    ['an undefined interval keeps the full student', { student: 0.9, features_only: 0.8, embedding_only: 0.93, rti_only: 0.7 }, null, 'student'],
    ['a tie with the full student keeps it', { student: 0.9, features_only: 0.9, embedding_only: 0.9, rti_only: 0.9 }, above, 'student'],
    ['two ablations tied above the student: the first of them', { student: 0.8, features_only: 0.7, embedding_only: 0.9, rti_only: 0.9 }, above, 'embedding_only'],
    ['an undefined (NaN) ablation score never wins', { student: 0.6, features_only: Number.NaN, embedding_only: 0.5, rti_only: 0.55 }, above, 'student'],
  ] as const)('%s', (_name, scores, lift, chosen) => {
    const asked: AblationVariant[] = [];
    const c = chooseStudent(scores as Record<StudentVariant, number>, 'auroc', (v) => (asked.push(v), lift));
    expect(c.chosen).toBe(chosen);
    expect(c.reason).toContain('val auroc');
    // the interval is computed only for the best ablation, and only when it outscored the full student
    const best = (['features_only', 'embedding_only', 'rti_only'] as const).reduce((a, b) => (scores[b] > scores[a] ? b : a));
    expect(asked).toEqual(scores[best] > scores.student ? [best] : []);
  });

  it('a lower-is-better metric scored as the objective scores it (−MAE): the smaller error wins, the reason prints the errors and the interval', () => {
    const c = chooseStudent({ student: -3.2, features_only: -2.5, embedding_only: -3.0, rti_only: -4.0 }, 'mae', () => [0.3, 0.9]);
    expect(c.chosen).toBe('features_only');
    expect(c.val_lift).toEqual([0.3, 0.9]);
    expect(c.reason).toBe('val mae 2.5000 against the full student\'s 3.2000, lift 95% interval [0.3000, 0.9000] above 0: the ablation is kept and exported');
  });
});
