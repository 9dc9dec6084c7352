//! Prompt templates: `.md` files under `prompts/`, compiled in with
//! `include_str!`, rendered with named `{{placeholders}}`.
//!
//! Rendering is strict: a placeholder without a value, or a value without a
//! placeholder, is an error, so a typo can never ship a silently blank
//! prompt. Every crate's tests render each of its templates.

/// Loads `prompts/<path>` at compile time as a [`Template`].
#[macro_export]
macro_rules! template {
    ($path:literal) => {
        $crate::Template::new(
            $path,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../prompts/",
                $path
            )),
        )
    };
}

/// A prompt template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Template {
    name: &'static str,
    text: &'static str,
}

/// A template could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The template uses a placeholder no value was given for.
    #[error("template {template}: no value for placeholder `{{{{{name}}}}}`")]
    MissingValue {
        /// The template file.
        template: &'static str,
        /// The placeholder.
        name: String,
    },
    /// A value was given for a placeholder the template does not have.
    #[error("template {template}: it has no placeholder `{{{{{name}}}}}`")]
    UnusedValue {
        /// The template file.
        template: &'static str,
        /// The value's name.
        name: String,
    },
    /// `{{` without a closing `}}`.
    #[error("template {template}: unclosed placeholder at byte {at}")]
    Unclosed {
        /// The template file.
        template: &'static str,
        /// Byte offset of the `{{`.
        at: usize,
    },
}

impl Template {
    /// A template named `name` (its path under `prompts/`) with this text;
    /// one trailing newline is dropped.
    pub const fn new(name: &'static str, text: &'static str) -> Self {
        let text = match text.as_bytes() {
            [.., b'\n'] => {
                let (head, _) = text.split_at(text.len() - 1);
                head
            }
            _ => text,
        };
        Self { name, text }
    }

    /// The template's path under `prompts/`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The raw text.
    pub fn text(&self) -> &'static str {
        self.text
    }

    /// The placeholder names, in order of first use.
    pub fn placeholders(&self) -> Result<Vec<&'static str>, TemplateError> {
        let mut names = Vec::new();
        for part in self.parts()? {
            if let Part::Hole(name) = part
                && !names.contains(&name)
            {
                names.push(name);
            }
        }
        Ok(names)
    }

    /// Renders with `values`; every placeholder needs a value and every
    /// value a placeholder.
    pub fn render(&self, values: &[(&str, &str)]) -> Result<String, TemplateError> {
        let parts = self.parts()?;
        for (name, _) in values {
            if !parts
                .iter()
                .any(|p| matches!(p, Part::Hole(h) if h == name))
            {
                return Err(TemplateError::UnusedValue {
                    template: self.name,
                    name: (*name).to_owned(),
                });
            }
        }
        let mut out = String::with_capacity(
            self.text.len() + values.iter().map(|(_, v)| v.len()).sum::<usize>(),
        );
        for part in parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Hole(name) => {
                    let value = values.iter().find(|(n, _)| *n == name).ok_or_else(|| {
                        TemplateError::MissingValue {
                            template: self.name,
                            name: name.to_owned(),
                        }
                    })?;
                    out.push_str(value.1);
                }
            }
        }
        Ok(out)
    }

    fn parts(&self) -> Result<Vec<Part>, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = self.text;
        let mut offset = 0;
        while let Some(start) = rest.find("{{") {
            parts.push(Part::Text(&rest[..start]));
            let after = &rest[start + 2..];
            let end = after.find("}}").ok_or(TemplateError::Unclosed {
                template: self.name,
                at: offset + start,
            })?;
            parts.push(Part::Hole(after[..end].trim()));
            let consumed = start + 2 + end + 2;
            rest = &rest[consumed..];
            offset += consumed;
        }
        parts.push(Part::Text(rest));
        Ok(parts)
    }
}

enum Part {
    Text(&'static str),
    Hole(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Template = Template::new("test.md", "Hello {{name}}, {{ name }} and {{other}}!\n");

    #[test]
    fn renders_every_placeholder_and_drops_the_final_newline() {
        assert_eq!(
            T.render(&[("name", "a"), ("other", "b")]).unwrap(),
            "Hello a, a and b!"
        );
        assert_eq!(T.placeholders().unwrap(), vec!["name", "other"]);
    }

    #[test]
    fn a_missing_value_is_an_error() {
        assert_eq!(
            T.render(&[("name", "a")]),
            Err(TemplateError::MissingValue {
                template: "test.md",
                name: "other".into()
            })
        );
    }

    #[test]
    fn an_unused_value_is_an_error() {
        let err = T
            .render(&[("name", "a"), ("other", "b"), ("typo", "c")])
            .unwrap_err();
        assert_eq!(
            err,
            TemplateError::UnusedValue {
                template: "test.md",
                name: "typo".into()
            }
        );
    }

    #[test]
    fn an_unclosed_placeholder_is_an_error() {
        let t = Template::new("bad.md", "oops {{name");
        assert!(matches!(
            t.render(&[]),
            Err(TemplateError::Unclosed { at: 5, .. })
        ));
    }
}
