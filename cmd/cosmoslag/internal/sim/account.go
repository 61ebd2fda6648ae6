package sim

const (
	DemoDatabase       = "shop"
	DemoContainer      = "orders"
	DemoLeaseContainer = "leases"
	DemoProcessor      = "order-projector"
	demoHotKey         = "tenant-hot"
)
