//! hearth's statements on top of DataFusion's SQL parser: `CREATE MODEL`, `DROP MODEL`, `SHOW MODELS`, and
//! `ML.*(MODEL name, …)` inside queries. Every other statement is DataFusion's, parsed by DataFusion.
//!
//! `MODEL name` and `TABLE name` are not SQL a parser knows, so inside the arguments of an `ML.` function they
//! are rewritten at the token level — `MODEL m` to the string `'m'`, `TABLE t` to `(SELECT * FROM t)` — and
//! the rest of the query parses as DataFusion's.

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::{DFParser, DFParserBuilder, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::{ObjectName, Query, SelectItem, SqlOption};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Word};

/// One statement of a SQL script.
#[derive(Debug, Clone)]
pub enum Statement {
    /// `CREATE [OR REPLACE] MODEL [IF NOT EXISTS] name [TRANSFORM (…)] OPTIONS (…) [TRANSFORM (…)] AS query`
    /// (BigQuery's order, or OPTIONS first).
    CreateModel(Box<CreateModel>),
    /// `EXPLAIN CREATE [OR REPLACE] MODEL …`: the statement's plan, checked, with nothing read or trained.
    ExplainCreateModel(Box<CreateModel>),
    /// `DROP MODEL [IF EXISTS] name`.
    DropModel {
        /// The model.
        name: String,
        /// No error when it does not exist.
        if_exists: bool,
    },
    /// `SHOW MODELS`.
    ShowModels,
    /// Anything else, as DataFusion parsed it (with `ML.*` calls rewritten).
    Sql(Box<DFStatement>),
}

impl std::fmt::Display for Statement {
    /// The statement as SQL; a `CREATE MODEL` without its options, transform and query.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Statement::CreateModel(create) => write!(f, "CREATE MODEL {}", create.name),
            Statement::ExplainCreateModel(create) => write!(f, "EXPLAIN CREATE MODEL {}", create.name),
            Statement::DropModel { name, .. } => write!(f, "DROP MODEL {name}"),
            Statement::ShowModels => f.write_str("SHOW MODELS"),
            Statement::Sql(statement) => write!(f, "{statement}"),
        }
    }
}

/// A parsed `CREATE MODEL` statement.
#[derive(Debug, Clone)]
pub struct CreateModel {
    /// The model's name in the catalog.
    pub name: String,
    /// `OR REPLACE`: replace a model of the same name.
    pub or_replace: bool,
    /// `IF NOT EXISTS`: do nothing when the model exists.
    pub if_not_exists: bool,
    /// The `OPTIONS (…)` list, in order.
    pub options: Vec<SqlOption>,
    /// The `TRANSFORM (…)` list, if any.
    pub transform: Option<Vec<SelectItem>>,
    /// The training query.
    pub query: Box<Query>,
}

/// Parses a script of `;`-separated statements. A syntax error names the line and column.
///
/// ```
/// use hearth_sql::{Statement, parse_statements};
/// let statements = parse_statements(
///     "CREATE MODEL m OPTIONS (model_type = 'mlp_classifier', input_label_cols = ['y']) AS SELECT * FROM t;
///      SELECT * FROM ML.PREDICT(MODEL m, TABLE t);
///      DROP MODEL IF EXISTS m",
/// )
/// .unwrap();
/// assert!(matches!(&statements[0], Statement::CreateModel(create) if create.name == "m"));
/// assert!(matches!(&statements[2], Statement::DropModel { if_exists: true, .. }));
/// ```
pub fn parse_statements(sql: &str) -> Result<Vec<Statement>> {
    let dialect = GenericDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| DataFusionError::SQL(Box::new(ParserError::from(e)), None))?;
    let mut parser = DFParserBuilder::new(rewrite_ml_arguments(tokens))
        .with_dialect(&dialect)
        .build()?;
    let mut statements = Vec::new();
    loop {
        while parser.parser.consume_token(&Token::SemiColon) {}
        if parser.parser.peek_token_ref().token == Token::EOF {
            return Ok(statements);
        }
        statements.push(parse_statement(&mut parser)?);
        let next = parser.parser.peek_token();
        if !matches!(next.token, Token::SemiColon | Token::EOF) {
            return Err(syntax(
                parser.parser.expected::<()>("end of statement", next).unwrap_err(),
            ));
        }
    }
}

fn syntax(error: ParserError) -> DataFusionError {
    DataFusionError::SQL(Box::new(error), None)
}

/// Whether the next tokens are these words (keywords or not), case-insensitively.
fn peek_words(parser: &DFParser, words: &[&str]) -> bool {
    words.iter().enumerate().all(|(i, word)| {
        matches!(&parser.parser.peek_nth_token_ref(i).token,
            Token::Word(w) if w.value.eq_ignore_ascii_case(word))
    })
}

/// Consumes `words` when they come next.
fn take_words(parser: &mut DFParser, words: &[&str]) -> bool {
    if !peek_words(parser, words) {
        return false;
    }
    for _ in words {
        parser.parser.next_token();
    }
    true
}

fn parse_statement(parser: &mut DFParser) -> Result<Statement> {
    if take_words(parser, &["EXPLAIN", "CREATE", "MODEL"]) {
        return Ok(Statement::ExplainCreateModel(parse_create_model(parser, false)?));
    }
    if take_words(parser, &["EXPLAIN", "CREATE", "OR", "REPLACE", "MODEL"]) {
        return Ok(Statement::ExplainCreateModel(parse_create_model(parser, true)?));
    }
    if take_words(parser, &["CREATE", "MODEL"]) {
        return Ok(Statement::CreateModel(parse_create_model(parser, false)?));
    }
    if take_words(parser, &["CREATE", "OR", "REPLACE", "MODEL"]) {
        return Ok(Statement::CreateModel(parse_create_model(parser, true)?));
    }
    if take_words(parser, &["DROP", "MODEL"]) {
        let if_exists = parser.parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        let name = model_name(&parser.parser.parse_object_name(false).map_err(syntax)?);
        return Ok(Statement::DropModel { name, if_exists });
    }
    if take_words(parser, &["SHOW", "MODELS"]) {
        return Ok(Statement::ShowModels);
    }
    Ok(Statement::Sql(Box::new(parser.parse_statement()?)))
}

/// A model's name as written: the identifier's value (quotes removed), parts of a dotted name joined by `.`.
pub(crate) fn model_name(name: &ObjectName) -> String {
    name.0
        .iter()
        .map(|part| {
            part.as_ident()
                .map_or_else(|| part.to_string(), |ident| ident.value.clone())
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn parse_create_model(parser: &mut DFParser, or_replace: bool) -> Result<Box<CreateModel>> {
    let p = &mut parser.parser;
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = model_name(&p.parse_object_name(false).map_err(syntax)?);
    // BigQuery writes TRANSFORM before OPTIONS; hearth has long taken it after them too.
    let transform_first = parse_transform(p)?;
    let options = p.parse_options(Keyword::OPTIONS).map_err(syntax)?;
    let transform = match transform_first {
        Some(items) => Some(items),
        None => parse_transform(p)?,
    };
    p.expect_keyword_is(Keyword::AS).map_err(syntax)?;
    let query = p.parse_query().map_err(syntax)?;
    Ok(Box::new(CreateModel {
        name,
        or_replace,
        if_not_exists,
        options,
        transform,
        query,
    }))
}

/// A `TRANSFORM (…)` list where the parser stands, if one is there.
fn parse_transform(p: &mut Parser) -> Result<Option<Vec<SelectItem>>> {
    if !is_word(&p.peek_token_ref().token, "TRANSFORM") {
        return Ok(None);
    }
    p.next_token();
    p.expect_token(&Token::LParen).map_err(syntax)?;
    let items = p.parse_projection().map_err(syntax)?;
    p.expect_token(&Token::RParen).map_err(syntax)?;
    Ok(Some(items))
}

fn is_word(token: &Token, word: &str) -> bool {
    matches!(token, Token::Word(w) if w.value.eq_ignore_ascii_case(word))
}

/// Rewrites `MODEL name` to `'name'` and `TABLE name` to `(SELECT * FROM name)` where they start an argument
/// of an `ML.function(…)` call.
fn rewrite_ml_arguments(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    // The parenthesis depth of each open `ML.f(` call.
    let mut calls: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut iter = tokens.into_iter().peekable();
    while let Some(token) = iter.next() {
        let starts_argument = calls.last() == Some(&depth)
            && matches!(
                out.iter()
                    .rev()
                    .find(|t| !matches!(t.token, Token::Whitespace(_)))
                    .map(|t| &t.token),
                Some(Token::LParen | Token::Comma)
            );
        if starts_argument
            && (is_word(&token.token, "MODEL") || is_word(&token.token, "TABLE"))
            && let Some(parts) = next_name(&mut iter)
        {
            let span = parts[0].span;
            if is_word(&token.token, "MODEL") {
                out.push(TokenWithSpan::new(Token::SingleQuotedString(joined(&parts)), span));
            } else {
                let word = |w: &str| Token::make_word(w, None);
                for t in [Token::LParen, word("SELECT"), Token::Mul, word("FROM")] {
                    out.push(TokenWithSpan::new(t, token.span));
                    out.push(TokenWithSpan::new(Token::Whitespace(whitespace()), token.span));
                }
                // The name as written, its quotes kept: `TABLE "My Table"` names that table.
                out.extend(parts);
                out.push(TokenWithSpan::new(Token::RParen, span));
            }
            continue;
        }
        match &token.token {
            Token::LParen => {
                depth += 1;
                if is_ml_call(&out) {
                    calls.push(depth);
                }
            }
            Token::RParen => {
                if calls.last() == Some(&depth) {
                    calls.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        out.push(token);
    }
    out
}

fn whitespace() -> datafusion::sql::sqlparser::tokenizer::Whitespace {
    datafusion::sql::sqlparser::tokenizer::Whitespace::Space
}

/// Whether the tokens so far end with `ML . name` (the `(` about to open an ML call).
fn is_ml_call(out: &[TokenWithSpan]) -> bool {
    let significant: Vec<&Token> = out
        .iter()
        .rev()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .take(3)
        .map(|t| &t.token)
        .collect();
    matches!(significant.as_slice(), [Token::Word(_), Token::Period, Token::Word(Word { value, .. })]
        if value.eq_ignore_ascii_case("ML"))
}

/// The (possibly dotted) name after `MODEL` or `TABLE`: its tokens as written (words and the periods between
/// them), none when no word follows.
fn next_name(iter: &mut std::iter::Peekable<impl Iterator<Item = TokenWithSpan>>) -> Option<Vec<TokenWithSpan>> {
    while matches!(iter.peek().map(|t| &t.token), Some(Token::Whitespace(_))) {
        iter.next();
    }
    let first = iter.next_if(|t| matches!(t.token, Token::Word(_)))?;
    let mut parts = vec![first];
    while matches!(iter.peek().map(|t| &t.token), Some(Token::Period)) {
        let period = iter.next()?;
        match iter.next_if(|t| matches!(t.token, Token::Word(_))) {
            Some(part) => parts.extend([period, part]),
            None => break,
        }
    }
    Some(parts)
}

/// A name's words joined by periods, unquoted (a model's name as the catalog knows it).
fn joined(parts: &[TokenWithSpan]) -> String {
    let words: Vec<&str> = (parts.iter())
        .filter_map(|t| match &t.token {
            Token::Word(word) => Some(word.value.as_str()),
            _ => None,
        })
        .collect();
    words.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_and_table_arguments_become_a_string_and_a_subquery() {
        let statements = parse_statements("SELECT * FROM ml.evaluate(MODEL `my model`, TABLE db.t) AS e").unwrap();
        let Statement::Sql(statement) = &statements[0] else {
            panic!("{statements:?}")
        };
        assert_eq!(
            statement.to_string(),
            "SELECT * FROM ml.evaluate('my model', (SELECT * FROM db.t)) AS e"
        );
    }

    #[test]
    fn a_quoted_table_keeps_its_quotes() {
        let statements = parse_statements(r#"SELECT * FROM ML.PREDICT(MODEL m, TABLE "My Table")"#).unwrap();
        let Statement::Sql(statement) = &statements[0] else {
            panic!("{statements:?}")
        };
        assert_eq!(
            statement.to_string(),
            r#"SELECT * FROM ML.PREDICT('m', (SELECT * FROM "My Table"))"#
        );
    }

    #[test]
    fn model_outside_ml_calls_is_left_alone() {
        let statements = parse_statements("SELECT model FROM t WHERE model = 'x'").unwrap();
        assert_eq!(statements.len(), 1);
    }

    #[test]
    fn a_syntax_error_names_the_line_and_column() {
        let error = parse_statements("SELECT 1;\nCREATE MODEL m OPTIONS (x = 1) SELECT 2")
            .unwrap_err()
            .to_string();
        assert!(error.contains("Line: 2, Column: 32"), "{error}");
    }
}
