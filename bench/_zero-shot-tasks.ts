// The binary zero-shot tasks the benches measure (`classify --accuracy`, `zero-shot-calibration`): sentiment
// ('positive review' on the UCI imdb, yelp and amazon sentences, the first 480 held-out texts of each),
// topics ('movie review', 'restaurant review', 'product review': each site against the other two, on
// those 1,440 texts) and 'spam' (SpamAssassin spam against easy and hard ham, bodies cut at 2,000 characters).
import { emailClasses, uciSentences, uciTasks } from '../fixtures/corpora.js';
import { split } from '../fixtures/draw.js';

const kTestTexts = 480;
const kEmailsPerClass = 150;

/** One binary zero-shot task: a label_text, texts and whether each is what the label says. */
export interface Task {
  name: string;
  labelText: string;
  texts: string[];
  expected: boolean[];
}

/** The seven tasks, sentiment first, in a fixed order. */
export function binaryZeroShotTasks(): Task[] {
  const sites = uciTasks.map((site) => ({ site, rows: split(uciSentences(site), 0).testSet.slice(0, kTestTexts) }));
  const tasks: Task[] = sites.map(({ site, rows }) => ({
    name: `${site} sentiment`,
    labelText: 'positive review',
    texts: rows.map((r) => r.text),
    expected: rows.map((r) => r.label),
  }));
  const pooled = sites.flatMap(({ site, rows }) => rows.map((r) => ({ text: r.text, site })));
  const reviewed = { imdb: 'movie review', yelp: 'restaurant review', amazon: 'product review' } as const;
  for (const site of uciTasks) {
    tasks.push({
      name: `${reviewed[site]} vs the rest`,
      labelText: reviewed[site],
      texts: pooled.map((r) => r.text),
      expected: pooled.map((r) => r.site === site),
    });
  }
  const mails = emailClasses(kEmailsPerClass, 2000);
  const ham = mails.filter((m) => m.label !== 'spam').slice(0, kEmailsPerClass);
  const spam = mails.filter((m) => m.label === 'spam');
  tasks.push({
    name: 'spam vs ham',
    labelText: 'spam',
    texts: [...spam, ...ham].map((m) => m.text),
    expected: [...spam.map(() => true), ...ham.map(() => false)],
  });
  return tasks;
}
