package v1alpha1

// DefaultControllerName is the GatewayClass controllerName Isobar serves
// unless told otherwise: the operator provisions fleets for its classes,
// and the controller and its offline commands translate for it.
const DefaultControllerName = "isobar.dev/gateway-controller"
