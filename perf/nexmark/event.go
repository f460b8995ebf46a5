package nexmark

import "streamd/core"

// Event kinds, the value of field Kind.
const (
	Person  = 0
	Auction = 1
	Bid     = 2
)

// Field positions in Schema.
const (
	FKind = iota
	FDateTime
	FID
	FName
	FEmail
	FCreditCard
	FCity
	FState
	FItemName
	FInitialBid
	FReserve
	FExpires
	FSeller
	FCategory
	FAuction
	FBidder
	FPrice
	FChannel
	FURL
	width
)

// Schema is the generator's event schema: the union of Nexmark's Person,
// Auction and Bid with a kind discriminator. Fields used by each kind:
//
//	person:  kind=0, date_time, id, name, email_address, credit_card, city, state
//	auction: kind=1, date_time, id, item_name, initial_bid, reserve, expires, seller, category
//	bid:     kind=2, date_time, auction, bidder, price, channel, url
//
// Every other field is zero ("" for strings, 0 for numbers and
// timestamps). Prices are in cents, as in Beam. Nexmark's description and
// extra (padding) fields are not generated.
var Schema = core.MustSchema(
	core.Field{Name: "kind", Type: core.Int64},
	core.Field{Name: "date_time", Type: core.Timestamp},
	core.Field{Name: "id", Type: core.Int64},
	core.Field{Name: "name", Type: core.String},
	core.Field{Name: "email_address", Type: core.String},
	core.Field{Name: "credit_card", Type: core.String},
	core.Field{Name: "city", Type: core.String},
	core.Field{Name: "state", Type: core.String},
	core.Field{Name: "item_name", Type: core.String},
	core.Field{Name: "initial_bid", Type: core.Int64},
	core.Field{Name: "reserve", Type: core.Int64},
	core.Field{Name: "expires", Type: core.Timestamp},
	core.Field{Name: "seller", Type: core.Int64},
	core.Field{Name: "category", Type: core.Int64},
	core.Field{Name: "auction", Type: core.Int64},
	core.Field{Name: "bidder", Type: core.Int64},
	core.Field{Name: "price", Type: core.Int64},
	core.Field{Name: "channel", Type: core.String},
	core.Field{Name: "url", Type: core.String},
)
