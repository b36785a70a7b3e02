// Command terraform-provider-reference is the yardstick of bench/network-plan.sh:
// the least a Terraform provider can be when built on HashiCorp's own protocol
// library (terraform-plugin-go). It has one data source, reference_echo, that
// copies its input to its output, so a plan with it measures what starting a
// provider costs the CLI and nothing else. It is never shipped.
package main

import (
	"context"
	"log"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

const address = "registry.hct.internal/hct/reference"

// echoType is reference_echo's value: the input, and the output the read fills in.
var echoType = tftypes.Object{AttributeTypes: map[string]tftypes.Type{
	"input":  tftypes.String,
	"output": tftypes.String,
}}

// server answers the calls a plan makes. The embedded interface is nil: any
// call a plan of a data source does not make would panic, which the benchmark
// would report as a failed plan.
type server struct{ tfprotov6.ProviderServer }

func (server) GetMetadata(context.Context, *tfprotov6.GetMetadataRequest) (*tfprotov6.GetMetadataResponse, error) {
	return &tfprotov6.GetMetadataResponse{
		ServerCapabilities: &tfprotov6.ServerCapabilities{GetProviderSchemaOptional: true},
		DataSources:        []tfprotov6.DataSourceMetadata{{TypeName: "reference_echo"}},
	}, nil
}

func (server) GetProviderSchema(context.Context, *tfprotov6.GetProviderSchemaRequest) (*tfprotov6.GetProviderSchemaResponse, error) {
	return &tfprotov6.GetProviderSchemaResponse{
		ServerCapabilities: &tfprotov6.ServerCapabilities{GetProviderSchemaOptional: true},
		Provider:           &tfprotov6.Schema{Block: &tfprotov6.SchemaBlock{}},
		DataSourceSchemas: map[string]*tfprotov6.Schema{"reference_echo": {Block: &tfprotov6.SchemaBlock{
			Attributes: []*tfprotov6.SchemaAttribute{
				{Name: "input", Type: tftypes.String, Required: true},
				{Name: "output", Type: tftypes.String, Computed: true},
			},
		}}},
		ResourceSchemas:          map[string]*tfprotov6.Schema{},
		EphemeralResourceSchemas: map[string]*tfprotov6.Schema{},
		ListResourceSchemas:      map[string]*tfprotov6.Schema{},
		ActionSchemas:            map[string]*tfprotov6.ActionSchema{},
		Functions:                map[string]*tfprotov6.Function{},
	}, nil
}

func (server) GetResourceIdentitySchemas(context.Context, *tfprotov6.GetResourceIdentitySchemasRequest) (*tfprotov6.GetResourceIdentitySchemasResponse, error) {
	return &tfprotov6.GetResourceIdentitySchemasResponse{IdentitySchemas: map[string]*tfprotov6.ResourceIdentitySchema{}}, nil
}

func (server) ValidateProviderConfig(_ context.Context, req *tfprotov6.ValidateProviderConfigRequest) (*tfprotov6.ValidateProviderConfigResponse, error) {
	return &tfprotov6.ValidateProviderConfigResponse{PreparedConfig: req.Config}, nil
}

func (server) ConfigureProvider(context.Context, *tfprotov6.ConfigureProviderRequest) (*tfprotov6.ConfigureProviderResponse, error) {
	return &tfprotov6.ConfigureProviderResponse{}, nil
}

func (server) StopProvider(context.Context, *tfprotov6.StopProviderRequest) (*tfprotov6.StopProviderResponse, error) {
	return &tfprotov6.StopProviderResponse{}, nil
}

func (server) ValidateDataResourceConfig(context.Context, *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	return &tfprotov6.ValidateDataResourceConfigResponse{}, nil
}

func (server) ReadDataSource(_ context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	config, err := req.Config.Unmarshal(echoType)
	if err != nil {
		return nil, err
	}
	var fields map[string]tftypes.Value
	if err := config.As(&fields); err != nil {
		return nil, err
	}
	state, err := tfprotov6.NewDynamicValue(echoType, tftypes.NewValue(echoType, map[string]tftypes.Value{
		"input":  fields["input"],
		"output": fields["input"],
	}))
	if err != nil {
		return nil, err
	}
	return &tfprotov6.ReadDataSourceResponse{State: &state}, nil
}

func main() {
	if err := tf6server.Serve(address, func() tfprotov6.ProviderServer { return server{} }); err != nil {
		log.Fatal(err)
	}
}
