"""Questions memory has no answer to: the no-answer set of ``bench_no_answer.py``.

Written for memlane (issue 20), in two kinds:

* **off-topic** — everyday questions no coding-agent archive, engineering note or chat between
  two friends answers ("how do I fix a leaking kitchen faucet?"); whatever recall injects for
  them is wrong;
* **unknown entity** — a question in the archive's own domain about something it never mentions
  ("what rate limit applies to the narwhal API?" where no narwhal exists): it shares the
  archive's words, so it is the hard case. ``engineering`` questions go to the coding-agent
  transcripts and the reversal corpus, ``personal`` ones (people who are not in the chats) to
  LoCoMo.

Every list alternates its parts: even positions are ``tune`` (the relevance floor was chosen
looking at these, on LoCoMo dev only), odd positions ``heldout`` (reported, never tuned on).

Example:
    >>> len(OFF_TOPIC) + len(UNKNOWN["engineering"]) + len(UNKNOWN["personal"]) >= 100
    True
    >>> [q.part for q in questions("off_topic")[:3]]
    ['tune', 'heldout', 'tune']
"""

from __future__ import annotations

from typing import NamedTuple

PARTS = ("tune", "heldout")


class Question(NamedTuple):
    """One no-answer question."""

    text: str
    kind: str  # off_topic | unknown_entity
    part: str  # tune | heldout


OFF_TOPIC: list[str] = [
    "How do I fix a leaking kitchen faucet?",
    "What did the doctor say about my blood test results?",
    "How long should I boil an egg for a runny yolk?",
    "What is the best way to remove red wine stains from a carpet?",
    "When is my car due for its next oil change?",
    "How much should I tip a hairdresser?",
    "What are the symptoms of iron deficiency?",
    "How do I descale an espresso machine?",
    "Which plants grow well on a shaded balcony?",
    "How do I file my income tax return as a freelancer?",
    "What is a good stretching routine for lower back pain?",
    "How do I unclog a bathroom sink drain?",
    "When does the dentist appointment for my son start?",
    "What should I pack for a weekend ski trip?",
    "How do I get rid of fruit flies in the kitchen?",
    "Which mortgage rate did the bank offer us?",
    "How do I reset the thermostat schedule?",
    "What temperature should a roast chicken reach inside?",
    "How do I patch a small hole in drywall?",
    "What vaccines does a puppy need in its first year?",
    "Where did I park the car at the airport?",
    "How many calories are in a bowl of oatmeal?",
    "What is the difference between baking soda and baking powder?",
    "How do I replace a flat bicycle tire tube?",
    "Which insurance covers water damage from a burst pipe?",
    "How do I knit a scarf for a beginner?",
    "What time does the pharmacy close on Sundays?",
    "How do I clean mold off a shower curtain?",
    "Which wine goes well with grilled salmon?",
    "How often should I water a fiddle leaf fig?",
    "What was the score of last night's football match?",
    "How do I jump start a car with a dead battery?",
    "What is a healthy resting heart rate for an adult?",
    "How do I negotiate a lower rent with my landlord?",
    "How should I store fresh basil so it lasts?",
    "What documents do I need to renew my passport?",
    "How do I stop my cat scratching the sofa?",
    "What is the capital of Mongolia?",
    "How long does it take to walk across the Golden Gate Bridge?",
    "How do I make sourdough starter from scratch?",
    "What are the side effects of ibuprofen?",
    "How do I hang a heavy mirror on a plaster wall?",
    "Which sunscreen SPF is enough for a beach holiday?",
    "How do I iron a dress shirt without creases?",
    "What is the recommended tire pressure for a family sedan?",
    "How do I get my toddler to sleep through the night?",
    "What is the best season to plant tulip bulbs?",
    "How do I write a condolence card to a neighbour?",
    "What did the plumber quote for the new boiler?",
    "How many tablespoons are in a cup?",
    "How do I sharpen a kitchen knife with a whetstone?",
    "When is the next full moon?",
    "Which vitamins should I take during pregnancy?",
    "How do I remove a splinter from a finger?",
    "What is the speed limit on a rural road in France?",
    "How do I repot an orchid?",
    "What should I say in a wedding toast for my sister?",
    "How do I get candle wax out of a tablecloth?",
    "Which running shoes are good for flat feet?",
    "How long can cooked rice stay in the fridge?",
    "What is the best way to learn to swim as an adult?",
    "How do I cancel my gym membership?",
    "How do I defrost a freezer quickly?",
    "What causes hiccups and how do I stop them?",
]

UNKNOWN: dict[str, list[str]] = {
    # Invented services, libraries, hosts and people in an engineering team's words.
    "engineering": [
        "What rate limit applies to the narwhal API?",
        "Which database does the quokka service use?",
        "Who owns the zephyrine repository?",
        "What port does the tardigrade exporter listen on?",
        "Why did the marmoset deploy fail last week?",
        "Which region is the pelican cluster running in?",
        "What is the retry policy of the axolotl worker?",
        "Who is the on-call lead for the wombat team?",
        "Which version of the okapi SDK do we pin?",
        "What does error code QX-7731 mean?",
        "Where is the config file for the capybara scheduler?",
        "What timeout does the ibis gateway use for upstream calls?",
        "Which message queue does the lemur pipeline consume from?",
        "How do I run the kestrel integration tests locally?",
        "What is the cache eviction policy of the manatee proxy?",
        "Who reviewed the pangolin migration plan?",
        "Which S3 bucket holds the gecko nightly exports?",
        "What is the memory limit of the ocelot container?",
        "Why was the fennec feature flag turned off?",
        "Which CI job builds the jackal Docker image?",
        "What schema does the heron events table use?",
        "How many replicas does the bison service run?",
        "Which auth scopes does the puffin client request?",
        "What is the SLA of the vicuna payments endpoint?",
        "Where are the dingo dashboards in Grafana?",
        "Which Python version does the mongoose tool require?",
        "What broke in the tapir release candidate?",
        "Who approved the cormorant database schema change?",
        "What does the walrus cron job do every night?",
        "Which hostname serves the ptarmigan admin panel?",
        "How is the nautilus queue drained during maintenance?",
        "What license does the quetzal library use?",
        "Which environment variable configures the gibbon log level?",
        "How do I rotate the credentials of the sable vault role?",
        "What is the p99 latency budget for the kinkajou search API?",
        "Which branch does the albatross team deploy from?",
        "Why does the civet test suite time out in CI?",
        "What format does the peccary export job write?",
        "Which load balancer fronts the serval web tier?",
        "What did the yak-shaving retro decide about the vireo linter?",
    ],
    # People and places the LoCoMo dev conversations never mention, in their everyday domain.
    "personal": [
        "What breed is Bartholomew's dog?",
        "When did Ophelia move to Lisbon?",
        "What instrument does Cornelius play in his band?",
        "Where did Gwendolyn go on her honeymoon?",
        "What is the name of Thaddeus's sailing boat?",
        "Which university did Philippa graduate from?",
        "What did Ignatius cook for the harvest festival?",
        "How many children does Leopoldine have?",
        "What is Evander's favourite board game?",
        "Why did Rosalind quit her job at the bakery?",
        "Which marathon did Octavian run in the spring?",
        "What colour did Henrietta paint her kitchen?",
        "Where does Percival volunteer on weekends?",
        "What was the name of Cordelia's first cat?",
        "Which country did Balthazar visit for his birthday?",
        "What language is Wilhelmina learning?",
        "How did Florian break his ankle?",
        "What novel is Marguerite writing?",
        "Which team does Augustin coach?",
        "Where did Perpetua meet her husband?",
        "What does Lysander do for a living?",
        "What car did Clementine buy last month?",
        "Which festival did Barnaby play at?",
        "What did Esmeralda name her pottery studio?",
        "How long has Montgomery been rock climbing?",
        "What did Isadora give her mother for her birthday?",
        "Which city did Ferdinand move to for his new job?",
        "What allergy does Theodora's son have?",
        "What hobby did Cassius pick up during the winter?",
        "Where did Rowena celebrate her anniversary?",
    ],
}


def questions(kind: str, domain: str | None = None) -> list[Question]:
    """The questions of one kind (``off_topic``, ``unknown_entity`` of ``domain``), parts alternating."""
    texts = OFF_TOPIC if kind == "off_topic" else UNKNOWN[domain or ""]
    return [Question(t, kind, PARTS[i % 2]) for i, t in enumerate(texts)]
