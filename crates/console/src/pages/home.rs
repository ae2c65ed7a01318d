//! `/`: the signed-in operator's home.

use actix_web::HttpResponse;
use domain::operators::Capability;
use maud::html;

use crate::error::ConsoleError;
use crate::layout::{Header, page};
use crate::nav::Section;
use crate::pages::html;
use crate::session::SignedIn;

/// `GET /`.
pub async fn home(signed_in: SignedIn) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let chrome = signed_in.chrome(Some(Section::Overview));
    let operator = &signed_in.auth.operator;
    let session = &signed_in.auth.session;
    Ok(html(page(
        "Overview",
        Header::SignedIn(&chrome),
        html! {
            section aria-labelledby="you" {
                h2 #you { "Your session" }
                dl.facts {
                    dt { "Signed in as" } dd { (operator.email.as_str()) }
                    dt { "Role" } dd { (operator.role.as_str()) }
                    dt { "Signed in at" } dd { (crate::fmt::when(session.created_at)) }
                    dt { "Session ends by" } dd { (crate::fmt::when(session.expires_at)) }
                }
            }
        },
    )))
}
