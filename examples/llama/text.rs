//! Real text for long prompts (`--prompt-len N`): the opening of Jane Austen's *Pride and
//! Prejudice* (1813, public domain), repeated until it covers N tokens, then cut to N.

pub const SOURCE: &str = "Jane Austen, Pride and Prejudice (1813), chapter 1";

pub const PASSAGE: &str = "It is a truth universally acknowledged, that a single man in possession \
of a good fortune, must be in want of a wife.

However little known the feelings or views of such a man may be on his first entering a \
neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is \
considered the rightful property of some one or other of their daughters.

\"My dear Mr. Bennet,\" said his lady to him one day, \"have you heard that Netherfield Park is let \
at last?\"

Mr. Bennet replied that he had not.

\"But it is,\" returned she; \"for Mrs. Long has just been here, and she told me all about it.\"

Mr. Bennet made no answer.

\"Do you not want to know who has taken it?\" cried his wife impatiently.

\"You want to tell me, and I have no objection to hearing it.\"

This was invitation enough.

\"Why, my dear, you must know, Mrs. Long says that Netherfield is taken by a young man of large \
fortune from the north of England; that he came down on Monday in a chaise and four to see the \
place, and was so much delighted with it, that he agreed with Mr. Morris immediately; that he is \
to take possession before Michaelmas, and some of his servants are to be in the house by the end \
of next week.\"

\"What is his name?\"

\"Bingley.\"

\"Is he married or single?\"

\"Oh! Single, my dear, to be sure! A single man of large fortune; four or five thousand a year. \
What a fine thing for our girls!\"

\"How so? How can it affect them?\"

\"My dear Mr. Bennet,\" replied his wife, \"how can you be so tiresome! You must know that I am \
thinking of his marrying one of them.\"

\"Is that his design in settling here?\"

\"Design! Nonsense, how can you talk so! But it is very likely that he may fall in love with one \
of them, and therefore you must visit him as soon as he comes.\"

";

/// `len` tokens of [`PASSAGE`], repeated as often as needed, encoded by `encode`.
pub fn long_prompt(
    len: usize,
    encode: impl Fn(&str) -> candle_core::Result<Vec<u32>>,
) -> candle_core::Result<Vec<u32>> {
    let once = encode(PASSAGE)?;
    if once.is_empty() {
        candle_core::bail!("the tokenizer encoded the prompt passage to no tokens")
    }
    let copies = len.div_ceil(once.len());
    let mut tokens = encode(&PASSAGE.repeat(copies))?;
    tokens.truncate(len);
    Ok(tokens)
}
